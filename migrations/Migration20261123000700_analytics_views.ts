import { Migration } from '@mikro-orm/migrations';

/**
 * The `analytics` schema: read-only views for analysts and BI tools (docs/analytics.md). Amounts
 * come as decimals in token units (per the token's decimals) next to their base units, IDR at the
 * order's locked rate, and times both as timestamptz and as Asia/Jakarta (WIB) wall-clock time.
 *
 * What stays out, on purpose: API-key hashes and ciphertexts, wallet seeds and derivation data,
 * sessions, refresh tokens, password hashes, checkout-key hashes, webhook URLs (they may carry
 * credentials; only `scheme://host:port` is shown), webhook payloads and errors, response bodies.
 *
 * Views run with their owner's rights, so a role granted SELECT on this schema alone reads these
 * columns and nothing else (`npm run cli -- analytics:role` creates that role).
 *
 * The "paying deposit" of an order is the one of its deposits that received the largest share of
 * what it asked for (ties: the newest); the GraphQL `orders` filter and the CSV export use the same rule.
 */
export class Migration20261123000700_analytics_views extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create schema if not exists "analytics";`);
    this.addSql(
      `comment on schema "analytics" is 'Read-only views for analysts (docs/analytics.md). No secrets: key hashes, seeds, wallets, sessions and webhook URLs are not reachable from here.';`,
    );
    // Exact: the dividend gets 36 decimals of scale first, so numeric division does not round (18-decimal tokens).
    this.addSql(`
      create function "analytics"."token_units"(base numeric, decimals int) returns numeric
      language sql immutable parallel safe
      as $$ select trim_scale((base + 0.000000000000000000000000000000000000) / power(10::numeric, decimals)) $$;`);
    this.addSql(`comment on function "analytics"."token_units"(numeric, int) is 'Base units → token units as an exact decimal (1500000, 6 → 1.5)';`);

    this.addSql(`
      create view "analytics"."merchants" as
      select m.id as merchant_id, m.name, m.platform_fee_percent, m.fee_included, m.order_ttl_seconds, m.created_at
      from public.merchants m;`);

    this.addSql(`
      create view "analytics"."tokens" as
      select t.id as token_id, t.environment, t.network, t.profile, t.symbol, t.name, t.address, t.decimals, t.active
      from public.tokens t;`);

    this.addSql(`
      create view "analytics"."deposits" as
      select d.id as deposit_id, d.order_id, o.merchant_id, d.environment, d.network,
             t.symbol as token_symbol, t.address as token_address, t.decimals,
             d.address as deposit_address, d.wallet_type, d.unique_code, d.status,
             analytics.token_units(d.total_amount, t.decimals) as total_amount, d.total_amount as total_amount_base,
             d.total_amount_fiat as total_amount_idr,
             analytics.token_units(d.amount_received, t.decimals) as amount_received, d.amount_received as amount_received_base,
             q.crypto_rate::numeric as rate_idr, q.rate_source, q.fee_percent::numeric as fee_percent, q.fee_included,
             q.fee_amount_idr as fee_idr, q.merchant_receives_idr as net_idr,
             d.expires_at, d.created_at, (d.created_at at time zone 'Asia/Jakarta') as created_at_wib
      from public.deposits d
      join public.orders o on o.id = d.order_id
      join public.tokens t on t.id = d.token_id
      join public.quotes q on q.id = d.quote_id;`);

    this.addSql(`
      create view "analytics"."orders" as
      select o.id as order_id, o.merchant_id, o.environment, o.order_no, o.status,
             o.amount as amount_idr, o.currency, o.customer_name, o.customer_email, o.source, o.payment_link_id, o.overpaid,
             o.created_at, o.expires_at, o.paid_at,
             (o.created_at at time zone 'Asia/Jakarta') as created_at_wib, (o.paid_at at time zone 'Asia/Jakarta') as paid_at_wib,
             p.deposit_id as paid_deposit_id, p.network as paid_network, p.token_symbol as paid_token_symbol, p.token_address as paid_token_address,
             p.amount_received as paid_amount, p.total_amount as due_amount, p.rate_idr, p.fee_idr, p.net_idr
      from public.orders o
      left join lateral (
        select d.id as deposit_id, d.network, t.symbol as token_symbol, t.address as token_address,
               analytics.token_units(d.amount_received, t.decimals) as amount_received,
               analytics.token_units(d.total_amount, t.decimals) as total_amount,
               q.crypto_rate::numeric as rate_idr, q.fee_amount_idr as fee_idr, q.merchant_receives_idr as net_idr
        from public.deposits d join public.tokens t on t.id = d.token_id join public.quotes q on q.id = d.quote_id
        where d.order_id = o.id and d.amount_received > 0
        order by d.amount_received / d.total_amount desc, d.created_at desc
        limit 1
      ) p on true;`);

    this.addSql(`
      create view "analytics"."payments" as
      select p.id as payment_id, p.order_id, o.order_no, o.merchant_id, p.environment, p.network,
             t.symbol as token_symbol, t.address as token_address, t.decimals,
             p.tx_hash, p.log_index, p.block_number, p.from_address, p.to_address,
             analytics.token_units(p.amount, t.decimals) as amount, p.amount as amount_base,
             round(analytics.token_units(p.amount, t.decimals) * q.crypto_rate::numeric) as amount_idr,
             q.crypto_rate::numeric as rate_idr,
             p.status, p.late, p.detected_at, p.confirmed_at, p.orphaned_at,
             (p.detected_at at time zone 'Asia/Jakarta') as detected_at_wib
      from public.payments p
      join public.orders o on o.id = p.order_id
      join public.tokens t on t.id = p.token_id
      join public.deposits d on d.id = p.deposit_id
      join public.quotes q on q.id = d.quote_id;`);

    this.addSql(`
      create view "analytics"."order_events" as
      select e.id as event_id, e.seq, e.order_id, e.merchant_id, e.environment, e.type, e.from_status, e.to_status, e.created_at
      from public.order_events e;`);

    this.addSql(`
      create view "analytics"."webhook_deliveries" as
      select w.id as delivery_id, w.merchant_id, w.environment, w.order_id, w.event_id, w.event, w.idempotency_key,
             w.endpoint, w.state, w.series, w.attempts, w.max_attempts, w.last_status,
             w.next_attempt_at, w.last_attempt_at, w.delivered_at, w.failed_at, w.created_at, w.updated_at
      from public.webhook_deliveries w;`);

    this.addSql(`
      create view "analytics"."webhook_attempts" as
      select a.id as attempt_id, a.delivery_id, w.merchant_id, w.environment, a.series, a.number, a.started_at, a.latency_ms, a.http_status, a.outcome
      from public.webhook_attempts a join public.webhook_deliveries w on w.id = a.delivery_id;`);

    this.addSql(`
      create view "analytics"."daily_revenue" as
      select (o.paid_at at time zone 'Asia/Jakarta')::date as day_wib, o.merchant_id, o.environment,
             o.paid_network as network, o.paid_token_symbol as token_symbol,
             count(*) as orders_paid, sum(o.amount_idr) as revenue_idr, sum(o.fee_idr) as fee_idr, sum(o.net_idr) as net_idr,
             sum(o.paid_amount) as token_amount, count(*) filter (where o.overpaid) as orders_overpaid
      from analytics.orders o
      where o.status = 'Success' and o.paid_at is not null
      group by 1, 2, 3, 4, 5;`);

    const comments: Record<string, string> = {
      merchants: 'Merchants and their fee settings (no notification URLs)',
      tokens: 'Token registry: network, symbol, contract or mint, decimals',
      deposits: 'Deposit addresses handed out per order and token, with the locked quote; amounts in token units and base units',
      orders: 'Orders with their paying deposit (network, token, paid amount in token units, fee and net in IDR at the locked rate)',
      payments: 'Observed transfers into deposit addresses: token units, base units, IDR at the order’s locked rate',
      order_events: 'Order status changes (one row per transition)',
      webhook_deliveries: 'Webhook deliveries (no URL, payload or error text; endpoint is scheme://host:port)',
      webhook_attempts: 'One row per webhook HTTP attempt (latency, status, outcome)',
      daily_revenue: 'Paid orders per day in Asia/Jakarta (WIB), merchant, environment, network and token',
    };
    for (const [view, text] of Object.entries(comments)) this.addSql(`comment on view "analytics"."${view}" is '${text}';`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop schema if exists "analytics" cascade;`);
  }
}
