import { Entity, ManyToOne, OptionalProps, PrimaryKey, Property, type Rel } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import { Merchant } from './merchant.entity.js';

export const USER_ROLES = ['owner', 'admin', 'viewer'] as const;
export type UserRole = (typeof USER_ROLES)[number];

@Entity({ tableName: 'dashboard_users' })
export class DashboardUser {
  [OptionalProps]?: 'role' | 'createdAt';

  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => Merchant, { fieldName: 'merchant_id' })
  merchant!: Rel<Merchant>;

  /** Stored lower-cased; unique. */
  @Property({ type: 'text', unique: true })
  email!: string;

  /** argon2id PHC string. */
  @Property({ type: 'text', hidden: true })
  passwordHash!: string;

  @Property({ type: 'text' })
  role: UserRole = 'owner';

  @Property({ type: 'timestamptz' })
  createdAt: Date = new Date();
}
