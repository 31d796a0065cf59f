import { Migration } from '@mikro-orm/migrations';

/**
 * What sweeps really cost, and the books for analysts (issue 26, items 5 and 8).
 *
 * - `sweep_txs.spent`: everything the signer's native balance lost in an included transaction (fee,
 *   coin it sent — a top-up, an activation — and the rent of accounts it opened), as the chain reports
 *   it; `spent_idr` its IDR value when it was recorded. Set only on transactions the gas tank paid for
 *   (it signed them, or it is their fee payer): the rows of the tank's ledger
 *   (`analytics.gas_tank_ledger`). A deposit's own transfer on a top-up chain is paid from its top-up,
 *   which the tank's ledger already counts.
 * - `sweeps.fee_paid` is the sweep's share of what its tank spent (not only the network fee);
 *   `fee_idr` its IDR value and `amount_idr` the IDR value of the swept amount, both at the time the
 *   sweep's transfer was seen in a block.
 * - Views in `analytics` (docs/analytics.md): `sweeps`, `gas_tank_ledger`, `deposit_balances` (per
 *   deposit and token: received, swept, in flight, held or waiting) and `sweep_positions` (the same
 *   summed per environment, network, token and state).
 */
export class Migration20261128001610_sweep_ledger extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "sweep_txs" add column if not exists "spent" numeric(78,0) null, add column if not exists "spent_idr" numeric null;`);
    this.addSql(`alter table "sweeps" add column if not exists "fee_idr" numeric null, add column if not exists "amount_idr" numeric null;`);
    this.addSql(`
      create or replace function "analytics"."native_decimals"(network text) returns int
      language sql immutable parallel safe
      as $$ select case network when 'TRON' then 6 when 'SOLANA' then 9 else 18 end $$;`);
    this.addSql(`comment on function "analytics"."native_decimals"(text) is 'Decimals of a network''s native coin (ETH, BNB: 18; TRX: 6; SOL: 9)';`);

    this.addSql(`
      create or replace view "analytics"."sweeps" as
      select s.id as sweep_id, s.merchant_id, s.environment, s.network, s.deposit_id, d.order_id, d.address as deposit_address,
             t.symbol as token_symbol, t.address as token_address, t.decimals, s.to_address, s.status, s.trigger, s.failure_reason,
             analytics.token_units(s.amount, t.decimals) as amount, s.amount as amount_base,
             case when t.id = d.token_id then round(analytics.token_units(s.amount, t.decimals) * q.crypto_rate::numeric) end as amount_idr_at_receipt,
             round(s.amount_idr) as amount_idr_at_sweep,
             s.fee_asset, analytics.token_units(s.fee_paid, analytics.native_decimals(s.network)) as fee, s.fee_paid as fee_base, round(s.fee_idr) as fee_idr,
             s.tx_hash, s.block_number, s.created_at, s.sent_at, s.confirmed_at, (s.confirmed_at at time zone 'Asia/Jakarta') as confirmed_at_wib
      from public.sweeps s
      join public.deposits d on d.id = s.deposit_id
      join public.tokens t on t.id = s.token_id
      join public.quotes q on q.id = d.quote_id;`);

    this.addSql(`
      create or replace view "analytics"."gas_tank_ledger" as
      select x.id as tx_id, x.environment, x.network, g.address as tank_address, x.signer, x.kind, x.tx_hash, x.block_number, x.success,
             analytics.token_units(x.spent, analytics.native_decimals(x.network)) as spent, x.spent as spent_base,
             analytics.token_units(x.fee_paid, analytics.native_decimals(x.network)) as fee, x.fee_paid as fee_base,
             round(x.spent_idr) as spent_idr,
             (select count(*) from public.sweep_tx_links l where l.tx_id = x.id) as sweeps,
             sum(x.spent) over (partition by x.environment, x.network order by x.block_number, x.id) as spent_to_date_base,
             x.updated_at as recorded_at
      from public.sweep_txs x
      join public.gas_tanks g on g.environment = x.environment and g.network = x.network
      where x.state = 'included' and x.spent is not null;`);

    this.addSql(`
      create or replace view "analytics"."deposit_balances" as
      with recv as (
        select deposit_id, token_id, sum(amount) as received from (
          select deposit_id, token_id, amount from public.payments where status = 'confirmed'
          union all
          select deposit_id, token_id, amount from public.unattributed_receipts where status = 'confirmed' and reason <> 'wrong_network'
        ) r group by 1, 2
      ), swept as (
        select deposit_id, token_id, sum(amount) filter (where status = 'confirmed') as swept,
               sum(coalesce(amount, 0)) filter (where status in ('sending','sent')) as sending,
               bool_or(status in ('planned','funding','funded','sending','sent')) as open
        from public.sweeps group by 1, 2
      )
      select d.id as deposit_id, o.merchant_id, d.environment, d.network, d.address as deposit_address, t.symbol as token_symbol, t.address as token_address, t.decimals,
             analytics.token_units(r.received, t.decimals) as received, r.received as received_base,
             analytics.token_units(coalesce(s.swept, 0), t.decimals) as swept, coalesce(s.swept, 0) as swept_base,
             analytics.token_units(r.received - coalesce(s.swept, 0), t.decimals) as unswept, r.received - coalesce(s.swept, 0) as unswept_base,
             case when r.received <= coalesce(s.swept, 0) then 'swept'
                  when coalesce(s.open, false) then 'sweeping'
                  when h.deposit_id is not null then 'held'
                  else 'waiting' end as state,
             h.reason as held_reason, h.checked_at as held_since
      from recv r
      join public.deposits d on d.id = r.deposit_id
      join public.orders o on o.id = d.order_id
      join public.tokens t on t.id = r.token_id
      left join swept s on s.deposit_id = r.deposit_id and s.token_id = r.token_id
      left join public.sweep_holds h on h.deposit_id = r.deposit_id and h.token_id = r.token_id;`);

    this.addSql(`
      create or replace view "analytics"."sweep_positions" as
      select environment, network, token_symbol, token_address, state,
             count(*) as deposits, sum(received) as received, sum(swept) as swept, sum(unswept) as unswept
      from analytics.deposit_balances
      group by 1, 2, 3, 4, 5;`);

    const comments: Record<string, string> = {
      sweeps:
        'One row per sweep: amount in token units, IDR at the order’s locked rate (receipt) and at the time of the sweep, the tank’s spend on it in native units and IDR',
      gas_tank_ledger:
        'Every included transaction a gas tank paid for: what the tank spent (fee, coin sent, rent) in native units and IDR, and the running total',
      deposit_balances: 'Per deposit and token: confirmed received, swept, unswept, and state (swept, sweeping, held with its reason, waiting)',
      sweep_positions: 'Swept vs sweeping vs held vs waiting per environment, network and token',
    };
    for (const [view, text] of Object.entries(comments)) this.addSql(`comment on view "analytics"."${view}" is '${text.replace(/'/g, "''")}';`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop view if exists "analytics"."sweep_positions", "analytics"."deposit_balances", "analytics"."gas_tank_ledger", "analytics"."sweeps";`);
    this.addSql(`drop function if exists "analytics"."native_decimals"(text);`);
    this.addSql(`alter table "sweeps" drop column if exists "fee_idr", drop column if exists "amount_idr";`);
    this.addSql(`alter table "sweep_txs" drop column if exists "spent", drop column if exists "spent_idr";`);
  }
}
