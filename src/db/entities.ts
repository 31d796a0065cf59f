import { ApiKey } from '../modules/merchants/api-key.entity.js';
import { DashboardUser } from '../modules/merchants/dashboard-user.entity.js';
import { Merchant } from '../modules/merchants/merchant.entity.js';
import { RefreshToken, Session } from '../modules/merchants/session.entity.js';

/** Every MikroORM entity. The schema itself is owned by `migrations/`; a test checks they agree. */
export const entities = [Merchant, DashboardUser, Session, RefreshToken, ApiKey];
