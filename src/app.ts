import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import type { Caller } from './common/context.js';
import type { Config } from './config/index.js';
import { SecretBox } from './common/crypto.js';
import type { Orm } from './db/orm.js';
import { ApiKeyService } from './modules/merchants/api-key.service.js';
import { AuthService } from './modules/merchants/auth.service.js';
import { MerchantService } from './modules/merchants/merchant.service.js';
import { RateLimits } from './rest/rate-limit.js';

/** The service graph, built once per process and shared by every transport and job. */
export interface App {
  config: Config;
  orm: Orm;
  log: Logger;
  box: SecretBox;
  rateLimits: RateLimits;
  apiKeys: ApiKeyService;
  auth: AuthService;
  merchants: MerchantService;
  /** Scoped checkout keys (orders module). */
  checkoutKeys?: { authenticate(em: EntityManager, raw: string): Promise<Caller> };
}

export function createApp(config: Config, orm: Orm, log: Logger): App {
  const box = new SecretBox(config.MASTER_KEY);
  const apiKeys = new ApiKeyService(box, config.API_KEY_PREFIX);
  const auth = new AuthService({ jwtSecret: config.JWT_SECRET, accessTtlS: config.ACCESS_TOKEN_TTL_S, refreshTtlS: config.REFRESH_TOKEN_TTL_S });
  const merchants = new MerchantService(apiKeys);
  const rateLimits = new RateLimits(config, orm.em.getConnection().getKnex());
  return { config, orm, log, box, rateLimits, apiKeys, auth, merchants };
}
