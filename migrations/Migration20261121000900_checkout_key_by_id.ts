import { Migration } from '@mikro-orm/migrations';

/**
 * Checkout keys now carry their order's id (`ck_<order id>_<secret>`) and are found by primary key,
 * so the unique index on the key hash goes: one index fewer to maintain on every order insert
 * (bench:orders). Keys issued before this change no longer parse; they live 30 minutes anyway.
 */
export class Migration20261121000900_checkout_key_by_id extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "orders" drop constraint if exists "orders_checkout_key_hash_unique";`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "orders" add constraint "orders_checkout_key_hash_unique" unique ("checkout_key_hash");`);
  }
}
