import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, TEST_JWT_SECRET, TEST_MASTER_KEY, type TestGateway } from '../support/gateway';
import { bareEnv, CLI_JS, requireDist, runProcess } from '../support/process';

let db: TestDatabase;
let gw: TestGateway;
let dataDir: string;
let env: Record<string, string | undefined>;

beforeAll(async () => {
  requireDist(CLI_JS);
  db = await createTestDatabase();
  dataDir = mkdtempSync(join(tmpdir(), 'cpg-cli-webhook-'));
  env = bareEnv({ DATABASE_URL: db.url, DATA_DIR: dataDir, MASTER_KEY: TEST_MASTER_KEY, JWT_SECRET: TEST_JWT_SECRET, NODE_ENV: 'test' });
  gw = await startTestGateway({ ROLE: 'api' }, { db });
});
afterAll(async () => {
  await gw?.close();
  await db?.drop();
  rmSync(dataDir, { recursive: true, force: true });
});

const cli = (...args: string[]) => runProcess(process.execPath, [CLI_JS, ...args], env, 60_000);
const urls = async (merchantId: string) =>
  (await gw.app.orm.em.fork().getConnection().execute(`select notification_url_sandbox as sandbox, notification_url_production as production from merchants where id = ?`, [merchantId]))[0];

it('merchant set-webhook sets, validates and clears the URL of one environment', async () => {
  const m = await createMerchant(gw.app);
  const set = await cli('merchant', 'set-webhook', '--merchant', m.merchantId, '--environment', 'sandbox', '--url', 'http://localhost:8080/hooks/cpg', '--json');
  expect({ code: set.code, stderr: set.stderr }).toEqual({ code: 0, stderr: '' });
  expect(JSON.parse(set.stdout)).toEqual({ merchant_id: m.merchantId, environment: 'sandbox', notification_url: 'http://localhost:8080/hooks/cpg' });
  expect(await urls(m.merchantId)).toEqual({ sandbox: 'http://localhost:8080/hooks/cpg', production: null });

  const refused = await cli('merchant', 'set-webhook', '--merchant', m.merchantId, '--environment', 'production', '--url', 'http://localhost:8080/hooks/cpg');
  expect(refused.code).toBe(1);
  expect(refused.stderr).toMatch(/NOTIFICATION_URL_REJECTED: notification_url must use https in production/);

  const cleared = await cli('merchant', 'set-webhook', '--merchant', m.merchantId, '--environment', 'sandbox', '--url', '');
  expect(cleared.code).toBe(0);
  expect(cleared.stdout.trim()).toBe('sandbox notification_url cleared');
  expect(await urls(m.merchantId)).toEqual({ sandbox: null, production: null });
});
