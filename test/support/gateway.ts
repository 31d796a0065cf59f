import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino, { type Logger } from 'pino';
import { loadConfig } from '../../src/config';
import type { App } from '../../src/app';
import { buildServer, type HttpServer } from '../../src/http/server';
import { startGateway, type Gateway, type StartOptions } from '../../src/runtime';
import { createTestDatabase, type TestDatabase } from './db';
import { TEST_JWT_SECRET, TEST_MASTER_KEY } from './secrets';

export { TEST_JWT_SECRET, TEST_MASTER_KEY };

export interface TestGateway extends Gateway {
  url: string;
  db: TestDatabase;
  /** Stops the gateway and drops its database. */
  close(): Promise<void>;
}

/** The real gateway, in-process, on a free port and its own database. */
export async function startTestGateway(env: Record<string, string> = {}, opts: StartOptions & { db?: TestDatabase; log?: Logger } = {}): Promise<TestGateway> {
  const db = opts.db ?? (await createTestDatabase());
  const config = loadConfig({
    NODE_ENV: 'test',
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    DATA_DIR: mkdtempSync(join(tmpdir(), 'cpg-test-data-')),
    DATABASE_URL: db.url,
    DATABASE_POOL_MAX: '10',
    MASTER_KEY: TEST_MASTER_KEY,
    JWT_SECRET: TEST_JWT_SECRET,
    DEV_CHAINS: 'false',
    // Most tests exercise the API without chains; tests of the watched-only rule set it to 'false'.
    OFFER_UNWATCHED_NETWORKS: 'true',
    RATE_LIMIT_STORE: 'memory',
    RATE_LIMIT_PUBLIC_PER_MIN: '100000',
    RATE_LIMIT_AUTH_PER_MIN: '100000',
    RATE_LIMIT_LOGIN_PER_MIN: '100000',
    RATE_LIMIT_LOGIN_ACCOUNT_PER_MIN: '100000',
    RATE_LIMIT_MERCHANT_PER_MIN: '100000',
    RATE_LIMIT_GRAPHQL_PER_MIN: '100000',
    RATE_LIMIT_CHECKOUT_KEY_PER_MIN: '100000',
    RATE_LIMIT_CHECKOUT_IP_PER_MIN: '100000',
    RATE_LIMIT_CLAIM_IP_PER_MIN: '100000',
    RATE_LIMIT_LINK_OPENS_PER_IP_PER_HOUR: '100000',
    RATE_LIMIT_LINK_OPENS_PER_LINK_PER_HOUR: '100000',
    RATE_SOURCES: 'none',
    // Short locks: Agenda keeps a lock keep-alive timer for up to half a lock lifetime after stop().
    WATCH_LOCK_MS: '4000',
    // The webhook jobs' lock follows the sweep period (default 30 s): keep it short for the same reason.
    WEBHOOK_SWEEP_INTERVAL_MS: '1000',
    // Test receivers listen on loopback, which is refused unless allowed explicitly.
    WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
    ...env,
  });
  const gw = await startGateway(config, opts.log ?? pino({ level: config.LOG_LEVEL }), { scheduler: { processEveryMs: 200, lockLifetimeMs: 2000 }, ...opts });
  return {
    ...gw,
    url: gw.url!,
    db,
    close: async () => {
      await gw.stop();
      if (!opts.db) await db.drop();
    },
  };
}

/**
 * Only the HTTP server over an app the test built itself, on a free port: for what the full gateway
 * cannot be (an unmigrated database, a stand-in schema). Everything else uses startTestGateway.
 */
export async function startTestServer(app: App, opts: Parameters<typeof buildServer>[1]): Promise<{ url: string; server: HttpServer; close(): Promise<void> }> {
  const server = await buildServer(app, opts);
  await server.fastify.listen({ host: '127.0.0.1', port: 0 });
  const url = `http://127.0.0.1:${(server.fastify.server.address() as { port: number }).port}`;
  return { url, server, close: () => server.close() };
}
