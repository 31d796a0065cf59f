import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase, type TestDatabase } from './db';
import { startTestGateway, TEST_JWT_SECRET, TEST_MASTER_KEY, type TestGateway } from './gateway';
import { bareEnv, CLI_JS, requireDist, runProcess } from './process';

/**
 * An operator's CLI next to a running gateway: one test database shared by an API gateway and the
 * built CLI (same secrets, its own data folder). Registers its own beforeAll/afterAll.
 */
export function cliHarness(dataDirPrefix: string) {
  let db: TestDatabase | undefined;
  let gw: TestGateway | undefined;
  let dataDir: string | undefined;
  let env: Record<string, string | undefined> = {};
  beforeAll(async () => {
    requireDist(CLI_JS);
    db = await createTestDatabase();
    dataDir = mkdtempSync(join(tmpdir(), dataDirPrefix));
    // What an operator sets next to the running server: the same database and secrets.
    env = bareEnv({
      DATABASE_URL: db.url,
      DATA_DIR: dataDir,
      MASTER_KEY: TEST_MASTER_KEY,
      JWT_SECRET: TEST_JWT_SECRET,
      NODE_ENV: 'test',
      WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
    });
    gw = await startTestGateway({ ROLE: 'api' }, { db });
  });
  afterAll(async () => {
    await gw?.close();
    await db?.drop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });
  return {
    get gw(): TestGateway {
      return gw!;
    },
    get env(): Record<string, string | undefined> {
      return env;
    },
    cli: (...args: string[]) => runProcess(process.execPath, [CLI_JS, ...args], env, 60_000),
  };
}
