import { Migration } from '@mikro-orm/migrations';

/**
 * Teams (issue 30): a dashboard user is a person, no longer a merchant's login. `memberships` says
 * which merchants a user belongs to and with which role (owner, admin, developer, finance, viewer —
 * src/common/permissions.ts); every existing login becomes a membership of its merchant with its
 * role, so every existing password keeps working. A session names its merchant (the active one):
 * requests are authorised against the membership of that user in that merchant, read on every
 * request, so a removed member's tokens fail at once. `team_invites` holds email invitations
 * (SHA-256 of the single-use token only, expiring).
 */
export class Migration20261128223000_teams extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table "memberships" (
        "id" uuid not null primary key,
        "user_id" uuid not null references "dashboard_users" ("id") on update cascade on delete cascade,
        "merchant_id" uuid not null references "merchants" ("id") on update cascade on delete cascade,
        "role" text not null check ("role" in ('owner', 'admin', 'developer', 'finance', 'viewer')),
        "created_at" timestamptz not null default now(),
        constraint "memberships_user_id_merchant_id_unique" unique ("user_id", "merchant_id")
      );`);
    this.addSql(`create index "memberships_user_id_index" on "memberships" ("user_id");`);
    this.addSql(`create index "memberships_merchant_id_index" on "memberships" ("merchant_id");`);
    this.addSql(`
      insert into "memberships" ("id", "user_id", "merchant_id", "role", "created_at")
      select gen_random_uuid(), u."id", u."merchant_id",
             case when u."role" in ('owner', 'admin', 'developer', 'finance', 'viewer') then u."role" else 'viewer' end,
             u."created_at"
        from "dashboard_users" u;`);

    this.addSql(`alter table "sessions" add column "merchant_id" uuid null references "merchants" ("id") on update cascade on delete cascade;`);
    this.addSql(`update "sessions" s set "merchant_id" = u."merchant_id" from "dashboard_users" u where u."id" = s."user_id";`);
    this.addSql(`alter table "sessions" alter column "merchant_id" set not null;`);
    this.addSql(`create index "sessions_merchant_id_index" on "sessions" ("merchant_id");`);

    this.addSql(`drop index if exists "dashboard_users_merchant_id_index";`);
    this.addSql(`alter table "dashboard_users" drop column "merchant_id", drop column "role";`);

    this.addSql(`
      create table "team_invites" (
        "id" uuid not null primary key,
        "merchant_id" uuid not null references "merchants" ("id") on update cascade on delete cascade,
        "email" text not null,
        "role" text not null check ("role" in ('owner', 'admin', 'developer', 'finance', 'viewer')),
        "token_hash" text not null unique,
        "invited_by_user_id" uuid null references "dashboard_users" ("id") on update cascade on delete set null,
        "created_at" timestamptz not null default now(),
        "expires_at" timestamptz not null,
        "accepted_at" timestamptz null,
        "accepted_user_id" uuid null references "dashboard_users" ("id") on update cascade on delete set null,
        "revoked_at" timestamptz null
      );`);
    // Pending invites of a merchant (listings), and one pending invite per merchant and email.
    this.addSql(`create index "team_invites_merchant_id_created_at_index" on "team_invites" ("merchant_id", "created_at" desc);`);
    this.addSql(
      `create unique index "team_invites_pending_email_unique" on "team_invites" ("merchant_id", "email") where "accepted_at" is null and "revoked_at" is null;`,
    );
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "team_invites";`);
    this.addSql(
      `alter table "dashboard_users" add column "merchant_id" uuid null references "merchants" ("id") on update cascade, add column "role" text not null default 'owner';`,
    );
    // Each user back to one merchant: the oldest membership (a user of several merchants keeps the first).
    this.addSql(`
      update "dashboard_users" u set "merchant_id" = m."merchant_id", "role" = case when m."role" in ('owner', 'admin', 'viewer') then m."role" else 'viewer' end
        from (select distinct on ("user_id") "user_id", "merchant_id", "role" from "memberships" order by "user_id", "created_at", "merchant_id") m
       where m."user_id" = u."id";`);
    this.addSql(`delete from "dashboard_users" where "merchant_id" is null;`);
    this.addSql(`alter table "dashboard_users" alter column "merchant_id" set not null;`);
    this.addSql(`create index "dashboard_users_merchant_id_index" on "dashboard_users" ("merchant_id");`);
    this.addSql(`alter table "sessions" drop column "merchant_id";`);
    this.addSql(`drop table if exists "memberships";`);
  }
}
