import { Migration } from '@mikro-orm/migrations';

/**
 * Refunds: money going back to a customer.
 *
 * - `refunds`: one row per refund of an order's payments (`receipt_id` null) or of one unattributed
 *   receipt, in the token and network it was received in. Moved through `refund.transitions.ts` by
 *   RefundStatusService only. The claim link's secret is stored as its SHA-256 (`claim_token_hash`),
 *   never in clear. The transfer is signed, then stored (`raw_tx`, `tx_hash`, `tx_nonce`,
 *   `tx_expires_at`) in the transaction that moves the refund to `sending`, and only then broadcast:
 *   after a crash the same stored transaction is broadcast again. A gas top-up of the refund's source
 *   is stored the same way (`funding_*`) before it is broadcast.
 * - `refund_settings`: per merchant and environment, the auto-approve limit for the kinds the gateway
 *   offers itself (in token units, null: never automatic) and who pays the network fee (`tank`: the
 *   gas tank; `deduct`: the fee's worth is taken off the amount sent).
 * - `refund_wallets`: per merchant, environment and network, the refund wallet the gateway derives
 *   from the merchant's HD wallet at a reserved index (REFUND_WALLET_INDEX_BASE + network), funded by
 *   the merchant; refunds of funds already swept are paid from it.
 * Money is numeric(78,0) (base units).
 */
export class Migration20261129060000_refunds extends Migration {
  override async up(): Promise<void> {
    const env = `"environment" text not null check ("environment" in ('sandbox','production'))`;
    const net = `"network" text not null check ("network" in ('ETHEREUM','BINANCE','TRON','SOLANA'))`;
    this.addSql(`
      create table "refunds" (
        "id" uuid primary key default gen_random_uuid(),
        "merchant_id" uuid not null references "merchants" ("id") on update cascade,
        ${env},
        ${net},
        "order_id" uuid not null references "orders" ("id") on update cascade,
        "receipt_id" uuid null references "unattributed_receipts" ("id") on update cascade,
        "deposit_id" uuid not null references "deposits" ("id") on update cascade,
        "token_id" uuid not null references "tokens" ("id") on update cascade,
        "amount" numeric(78,0) not null check ("amount" > 0),
        "kind" text not null check ("kind" in ('overpayment_excess','late_receipt','wrong_token','partial_payment','merchant')),
        "reason" text null check (length("reason") <= 500),
        "requested_by" text not null,
        "to_address" text null,
        "address_source" text null check ("address_source" in ('claim','merchant')),
        "claim_token_hash" text null,
        "fee_mode" text not null check ("fee_mode" in ('tank','deduct')),
        "fee_deducted" numeric(78,0) not null default 0,
        "status" text not null default 'requested' check ("status" in ('requested','claimed','approved','sending','confirmed','cancelled','failed')),
        "failure_reason" text null,
        "source" text null check ("source" in ('deposit','refund_wallet')),
        "from_address" text null,
        "sent_amount" numeric(78,0) null,
        "funding_tx_hash" text null,
        "funding_raw" text null,
        "funding_nonce" numeric(78,0) null,
        "funding_expires_at" numeric(78,0) null,
        "funding_block_number" bigint null,
        "tx_hash" text null,
        "raw_tx" text null,
        "tx_nonce" numeric(78,0) null,
        "tx_expires_at" numeric(78,0) null,
        "fee_paid" numeric(78,0) not null default 0,
        "block_number" bigint null,
        "block_hash" text null,
        "approved_by" text null,
        "created_at" timestamptz not null default now(),
        "updated_at" timestamptz not null default now(),
        "claimed_at" timestamptz null,
        "approved_at" timestamptz null,
        "sent_at" timestamptz null,
        "confirmed_at" timestamptz null,
        "cancelled_at" timestamptz null,
        constraint "refunds_claim_token_hash_unique" unique ("claim_token_hash"),
        constraint "refunds_address_check" check (("to_address" is null) = ("address_source" is null))
      );`);
    this.addSql(
      `create index "refunds_open_index" on "refunds" ("environment", "network", "status") where "status" not in ('confirmed','cancelled','failed');`,
    );
    this.addSql(`create index "refunds_merchant_history_index" on "refunds" ("merchant_id", "environment", "created_at" desc, "id" desc);`);
    this.addSql(`create index "refunds_order_index" on "refunds" ("order_id");`);
    this.addSql(`create index "refunds_deposit_index" on "refunds" ("deposit_id", "token_id");`);
    this.addSql(`create index "refunds_receipt_index" on "refunds" ("receipt_id") where "receipt_id" is not null;`);
    this.addSql(`
      create table "refund_settings" (
        "merchant_id" uuid not null references "merchants" ("id") on update cascade,
        ${env},
        "auto_approve_limit" numeric(38,6) null check ("auto_approve_limit" >= 0),
        "fee_mode" text not null default 'tank' check ("fee_mode" in ('tank','deduct')),
        "updated_at" timestamptz not null default now(),
        primary key ("merchant_id", "environment")
      );`);
    this.addSql(`
      create table "refund_wallets" (
        "merchant_id" uuid not null references "merchants" ("id") on update cascade,
        ${env},
        ${net},
        "wallet_id" uuid not null references "merchant_wallets" ("id") on update cascade,
        "family" text not null,
        "derivation_index" int not null,
        "address" text not null,
        "created_at" timestamptz not null default now(),
        primary key ("merchant_id", "environment", "network"),
        constraint "refund_wallets_address_unique" unique ("family", "address", "network")
      );`);
    // Refunds for analysts (docs/analytics.md): one row per refund, token units and base units, the IDR
    // worth at the deposit's locked rate when the refund is in the deposit's own token.
    this.addSql(`
      create or replace view "analytics"."refunds" as
      select r.id as refund_id, r.merchant_id, r.environment, r.network, r.order_id, o.order_no, r.receipt_id, r.deposit_id, r.kind, r.reason, r.status, r.failure_reason,
             t.symbol as token_symbol, t.address as token_address, t.decimals,
             analytics.token_units(r.amount, t.decimals) as amount, r.amount as amount_base,
             analytics.token_units(r.sent_amount, t.decimals) as sent_amount, r.sent_amount as sent_amount_base,
             case when t.id = d.token_id then round(analytics.token_units(r.amount, t.decimals) * q.crypto_rate::numeric) end as amount_idr,
             r.fee_mode, analytics.token_units(r.fee_deducted, t.decimals) as fee_deducted,
             analytics.token_units(r.fee_paid, analytics.native_decimals(r.network)) as network_fee,
             r.source, r.from_address, r.to_address, r.address_source, r.tx_hash, r.block_number,
             r.created_at, r.approved_at, r.sent_at, r.confirmed_at, (r.confirmed_at at time zone 'Asia/Jakarta') as confirmed_at_wib, r.cancelled_at
      from public.refunds r
      join public.orders o on o.id = r.order_id
      join public.deposits d on d.id = r.deposit_id
      join public.tokens t on t.id = r.token_id
      join public.quotes q on q.id = d.quote_id;`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop view if exists "analytics"."refunds";`);
    this.addSql(`drop table if exists "refund_wallets", "refund_settings", "refunds" cascade;`);
  }
}
