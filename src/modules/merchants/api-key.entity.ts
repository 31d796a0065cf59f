import { Entity, Index, ManyToOne, OptionalProps, PrimaryKey, Property, type Rel } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import type { Environment } from '../../common/environment.js';
import { Merchant } from './merchant.entity.js';

/**
 * Merchant API key, one live key per (merchant, environment) — a partial unique index in the migration.
 * Looked up by SHA-256; the AES-256-GCM copy exists only because webhooks are signed with the key.
 */
@Entity({ tableName: 'api_keys' })
@Index({ properties: ['merchant', 'environment'] })
export class ApiKey {
  [OptionalProps]?: 'createdAt' | 'revokedAt' | 'ipAllowlist' | 'lastUsedAt' | 'lastUsedIp';

  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => Merchant, { fieldName: 'merchant_id' })
  merchant!: Rel<Merchant>;

  @Property({ type: 'text' })
  environment!: Environment;

  @Property({ type: 'text', unique: true })
  keyHash!: string;

  @Property({ type: 'text', hidden: true })
  keyCiphertext!: string;

  /** Last 4 characters, to tell keys apart in the dashboard. */
  @Property({ type: 'text' })
  hint!: string;

  @Property({ type: 'timestamptz' })
  createdAt: Date = new Date();

  @Property({ type: 'timestamptz', nullable: true })
  revokedAt: Date | null = null;

  /** Client networks (CIDR) the key is accepted from; null = any. */
  @Property({ type: 'string[]', nullable: true })
  ipAllowlist: string[] | null = null;

  /** Written in batches by ApiKeyService.flushUsage, a few seconds behind. */
  @Property({ type: 'timestamptz', nullable: true })
  lastUsedAt: Date | null = null;

  @Property({ type: 'text', nullable: true })
  lastUsedIp: string | null = null;
}
