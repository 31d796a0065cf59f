import { Entity, ManyToOne, OptionalProps, PrimaryKey, Property, type Rel } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import { DashboardUser } from './dashboard-user.entity.js';
import { Merchant } from './merchant.entity.js';

/**
 * A dashboard login. The allowlist: an access token is accepted only while its session row is live,
 * so logout (or refresh-token reuse) revokes every token of the session at once. A session acts for
 * one merchant; `switchMerchant` opens another session for another of the user's merchants.
 */
@Entity({ tableName: 'sessions' })
export class Session {
  [OptionalProps]?: 'createdAt' | 'revokedAt' | 'revokedReason' | 'lastUsedAt' | 'reauthenticatedAt';

  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => DashboardUser, { fieldName: 'user_id' })
  user!: Rel<DashboardUser>;

  /** The merchant this session acts for (the user's membership in it is checked on every request). */
  @ManyToOne(() => Merchant, { fieldName: 'merchant_id', deleteRule: 'cascade' })
  merchant!: Rel<Merchant>;

  @Property({ type: 'timestamptz' })
  createdAt: Date = new Date();

  @Property({ type: 'timestamptz' })
  expiresAt!: Date;

  @Property({ type: 'timestamptz', nullable: true })
  lastUsedAt: Date | null = null;

  @Property({ type: 'timestamptz', nullable: true })
  revokedAt: Date | null = null;

  @Property({ type: 'text', nullable: true })
  revokedReason: string | null = null;

  /** Last `reauthenticate` (password given again) on this session: sensitive operations need it recent. */
  @Property({ type: 'timestamptz', nullable: true })
  reauthenticatedAt: Date | null = null;
}

/** Refresh tokens form a chain per session; each is used once. Reusing a used one revokes the session. */
@Entity({ tableName: 'refresh_tokens' })
export class RefreshToken {
  [OptionalProps]?: 'createdAt' | 'usedAt';

  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  // ON DELETE CASCADE (as in the migration): pruning a session removes its refresh tokens.
  @ManyToOne(() => Session, { fieldName: 'session_id', deleteRule: 'cascade' })
  session!: Rel<Session>;

  /** SHA-256 of the opaque token. */
  @Property({ type: 'text', unique: true })
  tokenHash!: string;

  @Property({ type: 'timestamptz' })
  createdAt: Date = new Date();

  @Property({ type: 'timestamptz', nullable: true })
  usedAt: Date | null = null;
}
