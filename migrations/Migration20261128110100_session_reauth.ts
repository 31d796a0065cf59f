import { Migration } from '@mikro-orm/migrations';

/**
 * When a dashboard session last proved its password again (issue 30, finding 2): sensitive operations
 * (rotating an API key, changing the notification URL or the sweep schedule) need it within
 * `REAUTH_WINDOW_S`, so a stolen access token alone cannot do them. Per session: re-authenticating in
 * one browser does not make another session's token fresh.
 */
export class Migration20261128110100_session_reauth extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "sessions" add column if not exists "reauthenticated_at" timestamptz null;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "sessions" drop column if exists "reauthenticated_at";`);
  }
}
