import { Migration } from '@mikro-orm/migrations';

/**
 * Envelope encryption: the data keys that seal secrets at rest, each wrapped by a key-encryption key
 * (`kek_id` names which). The newest `position` seals; all open. The first start makes position 1.
 */
export class Migration20261129020000_data_keys extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table "data_keys" (
      "position" int primary key check ("position" > 0),
      "id" text not null unique,
      "kek_id" text not null,
      "wrapped" text not null,
      "created_at" timestamptz not null default now()
    );`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "data_keys";`);
  }
}
