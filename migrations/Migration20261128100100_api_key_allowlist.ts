import { Migration } from '@mikro-orm/migrations';

/**
 * API keys (docs/security.md, the API key bullet): an optional allowlist of client networks (CIDR text, checked
 * on every request; null = any address), and when and from where the key was last used (written in
 * batches, a few seconds behind, never on the request's path).
 */
export class Migration20261128100100_api_key_allowlist extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      `alter table "api_keys" add column if not exists "ip_allowlist" text[] null, add column if not exists "last_used_at" timestamptz null, add column if not exists "last_used_ip" text null;`,
    );
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "api_keys" drop column if exists "ip_allowlist", drop column if exists "last_used_at", drop column if exists "last_used_ip";`);
  }
}
