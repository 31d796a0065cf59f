import { Entity, OptionalProps, PrimaryKey, Property } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';

/**
 * A person who signs in to the dashboard (email and password). Which merchants they may act for, and
 * as what, is their memberships (src/modules/teams/membership.entity.ts); a session names one of them.
 */
@Entity({ tableName: 'dashboard_users' })
export class DashboardUser {
  [OptionalProps]?: 'createdAt';

  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  /** Stored lower-cased; unique. */
  @Property({ type: 'text', unique: true })
  email!: string;

  /** argon2id PHC string. */
  @Property({ type: 'text', hidden: true })
  passwordHash!: string;

  @Property({ type: 'timestamptz' })
  createdAt: Date = new Date();
}
