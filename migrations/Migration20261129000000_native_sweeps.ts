import { Migration } from '@mikro-orm/migrations';

/**
 * Native coin at a deposit is swept like a token (docs/sweeps.md "Native coin"): a sweep and a hold
 * with no `token_id` are the network's native coin (ETH, BNB, TRX, SOL), as in `unattributed_receipts`.
 *
 * - `sweeps.token_id` and `sweep_holds.token_id` may be null; one open sweep and one hold per deposit
 *   and asset still (the unique indexes treat null as one asset: `nulls not distinct`).
 * - `sweep_holds.reason` gains `native_dust`: the native coin there would not pay for its own transfer.
 * - `analytics.sweeps` lists native sweeps too (symbol and decimals of the network's native coin).
 */
export class Migration20261129000000_native_sweeps extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "sweeps" alter column "token_id" drop not null;`);
    this.addSql(`drop index if exists "sweeps_open_unique";`);
    this.addSql(
      `create unique index "sweeps_open_unique" on "sweeps" ("deposit_id", "token_id") nulls not distinct where "status" not in ('confirmed','failed');`,
    );
    this.addSql(`alter table "sweep_holds" drop constraint if exists "sweep_holds_pkey";`);
    this.addSql(`alter table "sweep_holds" alter column "token_id" drop not null;`);
    this.addSql(`create unique index "sweep_holds_deposit_asset_unique" on "sweep_holds" ("deposit_id", "token_id") nulls not distinct;`);
    this.addSql(`alter table "sweep_holds" drop constraint if exists "sweep_holds_reason_check";`);
    this.addSql(`alter table "sweep_holds" add constraint "sweep_holds_reason_check" check ("reason" in ('below_minimum','fee_too_high','native_dust'));`);
    this.addSql(`alter table "sweep_holds" add constraint "sweep_holds_native_check" check (("reason" = 'native_dust') = ("token_id" is null));`);
    this.addSql(sweepsView(`left join public.tokens t on t.id = s.token_id`));
  }

  override async down(): Promise<void> {
    this.addSql(sweepsView(`join public.tokens t on t.id = s.token_id`));
    this.addSql(`delete from "sweep_holds" where "token_id" is null;`);
    this.addSql(`alter table "sweep_holds" drop constraint if exists "sweep_holds_native_check";`);
    this.addSql(`alter table "sweep_holds" drop constraint if exists "sweep_holds_reason_check";`);
    this.addSql(`alter table "sweep_holds" add constraint "sweep_holds_reason_check" check ("reason" in ('below_minimum','fee_too_high'));`);
    this.addSql(`drop index if exists "sweep_holds_deposit_asset_unique";`);
    this.addSql(`alter table "sweep_holds" alter column "token_id" set not null;`);
    this.addSql(`alter table "sweep_holds" add primary key ("deposit_id", "token_id");`);
    this.addSql(`delete from "sweep_tx_links" where "sweep_id" in (select "id" from "sweeps" where "token_id" is null);`);
    this.addSql(`delete from "sweeps" where "token_id" is null;`);
    this.addSql(`drop index if exists "sweeps_open_unique";`);
    this.addSql(`create unique index "sweeps_open_unique" on "sweeps" ("deposit_id", "token_id") where "status" not in ('confirmed','failed');`);
    this.addSql(`alter table "sweeps" alter column "token_id" set not null;`);
  }
}

/** `analytics.sweeps` over `tokenJoin` (native sweeps: no token row, the network's native coin). */
function sweepsView(tokenJoin: string): string {
  return `
      create or replace view "analytics"."sweeps" as
      select s.id as sweep_id, s.merchant_id, s.environment, s.network, s.deposit_id, d.order_id, d.address as deposit_address,
             coalesce(t.symbol, case s.network when 'ETHEREUM' then 'ETH' when 'BINANCE' then 'BNB' when 'TRON' then 'TRX' else 'SOL' end) as token_symbol,
             coalesce(t.address, 'native') as token_address, coalesce(t.decimals, analytics.native_decimals(s.network)) as decimals, s.to_address, s.status, s.trigger, s.failure_reason,
             analytics.token_units(s.amount, coalesce(t.decimals, analytics.native_decimals(s.network))) as amount, s.amount as amount_base,
             case when t.id = d.token_id then round(analytics.token_units(s.amount, t.decimals) * q.crypto_rate::numeric) end as amount_idr_at_receipt,
             round(s.amount_idr) as amount_idr_at_sweep,
             s.fee_asset, analytics.token_units(s.fee_paid, analytics.native_decimals(s.network)) as fee, s.fee_paid as fee_base, round(s.fee_idr) as fee_idr,
             s.tx_hash, s.block_number, s.created_at, s.sent_at, s.confirmed_at, (s.confirmed_at at time zone 'Asia/Jakarta') as confirmed_at_wib
      from public.sweeps s
      join public.deposits d on d.id = s.deposit_id
      ${tokenJoin}
      join public.quotes q on q.id = d.quote_id;`;
}
