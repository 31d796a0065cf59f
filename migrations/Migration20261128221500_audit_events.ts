import { Migration } from '@mikro-orm/migrations';

/**
 * The audit trail (issue 30): one row per login, failed login, sensitive operation and operator action
 * (src/modules/audit/). Append-only twice over: a trigger refuses UPDATE, DELETE and TRUNCATE for every
 * role that has not disabled it (only the table's owner or a superuser can), and the application's role
 * is meant to hold INSERT and SELECT only (docs/security.md "Audit trail"). Each row carries the hash
 * of the previous row of its chain (one chain per merchant, one for operator actions without a
 * merchant) and its own hash, so an edit or a gap made by someone who got past both shows in
 * `audit verify`. `(chain, chain_seq)` is unique: two writers can never fork a chain.
 */
export class Migration20261128221500_audit_events extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table if not exists "audit_events" (
      "id" bigserial primary key,
      "chain" text not null,
      "chain_seq" bigint not null,
      "occurred_at" timestamptz not null,
      "action" text not null,
      "merchant_id" uuid null,
      "user_id" uuid null,
      "api_key_id" uuid null,
      "operator" text null,
      "subject" text null,
      "ip" text null,
      "user_agent" text null,
      "request_id" text null,
      "before" jsonb null,
      "after" jsonb null,
      "prev_hash" text not null,
      "hash" text not null,
      constraint "audit_events_chain_seq_unique" unique ("chain", "chain_seq")
    );`);
    this.addSql(`create index if not exists "audit_events_merchant_idx" on "audit_events" ("merchant_id", "occurred_at" desc, "id" desc);`);
    this.addSql(`create or replace function audit_events_append_only() returns trigger language plpgsql as $$
      begin
        raise exception 'audit_events is append-only: % refused', tg_op using errcode = 'insufficient_privilege';
      end $$;`);
    this.addSql(`drop trigger if exists "audit_events_no_change" on "audit_events";`);
    this.addSql(`create trigger "audit_events_no_change" before update or delete on "audit_events" for each row execute function audit_events_append_only();`);
    this.addSql(`drop trigger if exists "audit_events_no_truncate" on "audit_events";`);
    this.addSql(`create trigger "audit_events_no_truncate" before truncate on "audit_events" for each statement execute function audit_events_append_only();`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "audit_events";`);
    this.addSql(`drop function if exists audit_events_append_only();`);
  }
}
