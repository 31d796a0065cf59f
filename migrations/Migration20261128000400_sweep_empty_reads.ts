import { Migration } from '@mikro-orm/migrations';

/**
 * A funded sweep whose deposit reads empty at send time is not failed on the first such read
 * (docs/sweeps.md "Crash safety", the "Nothing to sweep" point): a lagging RPC node or a read racing another worker can answer
 * 0 for a deposit that holds tokens. The engine counts the empty reads of the sweep here and fails it
 * `nothing_to_sweep` only after a few of them on separate ticks (`EMPTY_READS_TO_FAIL` in sweep-send.step.ts).
 */
export class Migration20261128000400_sweep_empty_reads extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "sweeps" add column "empty_reads" smallint not null default 0 check ("empty_reads" >= 0);`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "sweeps" drop column if exists "empty_reads";`);
  }
}
