import { Migration } from '@mikro-orm/migrations';

/**
 * What refunds cost the gas tank, for its ledger (funded − spent): `funding_spent`, everything the
 * tank's balance lost in the top-ups of the refund's source once all are included (the coin sent and
 * the fees; each top-up's own block and cost are kept in `funding_raw`), and
 * `tank_spent`, what it lost in the refund's own transfer where the tank pays the fee (SOLANA: the
 * fee and the rent of the token account it opens). Null: not included yet, or not the tank's.
 */
export class Migration20261129070000_refund_tank_spent extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "refunds" add column "funding_spent" numeric(78,0) null, add column "tank_spent" numeric(78,0) null;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "refunds" drop column "funding_spent", drop column "tank_spent";`);
  }
}
