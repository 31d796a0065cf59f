import { Migration } from '@mikro-orm/migrations';

/**
 * The GraphQL `payments` connection lists an environment's payments newest detected first (keyset on
 * `(detected_at, id)`); this index serves that order instead of sorting every payment of the environment.
 */
export class Migration20261127000200_payments_listing_index extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create index "payments_environment_detected_at_index" on "payments" ("environment", "detected_at");`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop index if exists "payments_environment_detected_at_index";`);
  }
}
