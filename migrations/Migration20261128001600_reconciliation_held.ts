import { Migration } from '@mikro-orm/migrations';

/**
 * Reconciliation after sweeps (issue 26): each run also lists the deposits the sweep engine holds
 * (`sweep_holds`: dust, below the token's minimum) with their reason, so every balance left at a
 * deposit address has an explanation in the operators' record.
 */
export class Migration20261128001600_reconciliation_held extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "reconciliation_runs" add column if not exists "held" jsonb not null default '[]';`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "reconciliation_runs" drop column if exists "held";`);
  }
}
