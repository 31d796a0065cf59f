import { Entity, ManyToOne, OptionalProps, PrimaryKey, Property, Unique, type Rel } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import type { TeamRole } from '../../common/permissions.js';
import { DashboardUser } from '../merchants/dashboard-user.entity.js';
import { Merchant } from '../merchants/merchant.entity.js';

/** A user's place in a merchant's team: one row per (user, merchant), with the role (permissions.ts). */
@Entity({ tableName: 'memberships' })
@Unique({ properties: ['user', 'merchant'] })
export class Membership {
  [OptionalProps]?: 'createdAt';

  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => DashboardUser, { fieldName: 'user_id', deleteRule: 'cascade' })
  user!: Rel<DashboardUser>;

  @ManyToOne(() => Merchant, { fieldName: 'merchant_id', deleteRule: 'cascade' })
  merchant!: Rel<Merchant>;

  @Property({ type: 'text' })
  role!: TeamRole;

  @Property({ type: 'timestamptz' })
  createdAt: Date = new Date();
}
