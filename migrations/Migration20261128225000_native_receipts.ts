import { Migration } from '@mikro-orm/migrations';

/**
 * Native coin sent to a deposit address (ETH on ETHEREUM, BNB on BINANCE, TRX on TRON; issue 26 item
 * 6) is an unattributed receipt like a wrong token: `reason = 'native_coin'`, no `token_id` (the asset
 * is the network's native coin), `log_index = -1` (the transaction's own value, which no event log
 * index can take). Every other reason still names a registry token.
 */
export class Migration20261128225000_native_receipts extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "unattributed_receipts" alter column "token_id" drop not null;`);
    this.addSql(`alter table "unattributed_receipts" drop constraint if exists "unattributed_receipts_reason_check";`);
    this.addSql(
      `alter table "unattributed_receipts" add constraint "unattributed_receipts_reason_check" check ("reason" in ('late','wrong_token','wrong_network','native_coin'));`,
    );
    this.addSql(
      `alter table "unattributed_receipts" add constraint "unattributed_receipts_native_check" check (("reason" = 'native_coin') = ("token_id" is null));`,
    );
  }

  override async down(): Promise<void> {
    this.addSql(`delete from "unattributed_receipts" where "reason" = 'native_coin';`);
    this.addSql(`alter table "unattributed_receipts" drop constraint if exists "unattributed_receipts_native_check";`);
    this.addSql(`alter table "unattributed_receipts" drop constraint if exists "unattributed_receipts_reason_check";`);
    this.addSql(
      `alter table "unattributed_receipts" add constraint "unattributed_receipts_reason_check" check ("reason" in ('late','wrong_token','wrong_network'));`,
    );
    this.addSql(`alter table "unattributed_receipts" alter column "token_id" set not null;`);
  }
}
