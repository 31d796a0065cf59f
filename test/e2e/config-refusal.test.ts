import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bareEnv, lockDist, MAIN_JS, requireDist, runProcess } from '../support/process';

// The rules themselves are unit-tested in test/unit/config.test.ts; this checks the built program applies them at start.
const dirs: string[] = [];
const tmp = () => {
  const d = mkdtempSync(join(tmpdir(), 'cpg-config-'));
  dirs.push(d);
  return d;
};
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

describe('the built program refuses bad configuration', () => {
  // `npm run cli` in another test file may be rewriting dist/ meanwhile.
  let release: () => void;
  beforeAll(async () => {
    requireDist();
    release = await lockDist();
  });
  afterAll(() => release?.());

  it('node dist/src/main.js with PORT=abc exits non-zero, naming PORT', async () => {
    const dataDir = tmp();
    const r = await runProcess(process.execPath, [MAIN_JS], bareEnv({ PORT: 'abc', DATA_DIR: dataDir }), 30_000);
    expect(r.code).not.toBe(0);
    expect(r.code).not.toBeNull();
    expect(r.stderr).toMatch(/Invalid configuration/);
    expect(r.stderr).toMatch(/PORT: /);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it('NODE_ENV=production without secrets exits non-zero, naming each missing variable', async () => {
    const r = await runProcess(process.execPath, [MAIN_JS], bareEnv({ NODE_ENV: 'production', PORT: '0', DATA_DIR: tmp() }), 30_000);
    expect(r.code).not.toBe(0);
    for (const v of ['MASTER_KEY', 'JWT_SECRET', 'DATABASE_URL']) expect(r.stderr).toContain(`${v}: required in production`);
  });
});
