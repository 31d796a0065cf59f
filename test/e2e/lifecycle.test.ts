import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { freePort } from '../../src/db/embedded-postgres';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { TEST_JWT_SECRET, TEST_MASTER_KEY } from '../support/gateway';
import { http } from '../support/http';
import { bareEnv, exitWithin, lockDist, MAIN_JS, processesMatching, requireDist, spawnProcess, waitForHttp, type Spawned } from '../support/process';

const dirs: string[] = [];
const spawned: Spawned[] = [];
afterAll(async () => {
  for (const p of spawned) await p.kill();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
beforeAll(() => requireDist());

/** Starts `node dist/src/main.js` with exactly `env`; resolves once /readyz answers 200. */
async function startMain(env: Record<string, string | undefined>, port: number): Promise<{ p: Spawned; base: string }> {
  const base = `http://127.0.0.1:${port}`;
  // Hold the dist lock while the program loads its modules (another file may rebuild dist/).
  const release = await lockDist();
  const p = spawnProcess(process.execPath, [MAIN_JS], env);
  spawned.push(p);
  try {
    let ready = false;
    const early = p.exited.then(({ code }) => {
      if (!ready) throw new Error(`gateway exited early (code ${code}):\n${p.stdout().slice(-3000)}\n${p.stderr().slice(-3000)}`);
    });
    await Promise.race([waitForHttp(`${base}/readyz`, 90_000), early]);
    ready = true;
  } finally {
    release();
  }
  return { p, base };
}

describe('node dist/src/main.js with an empty environment (embedded PostgreSQL, generated dev secrets)', () => {
  it('becomes ready, answers GraphQL introspection, warns about dev secrets (generated, then read on the next start), and stops cleanly on SIGINT', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'cpg-life-'));
    dirs.push(dataDir);
    const port = await freePort();
    const started = Date.now();
    const { p, base } = await startMain(bareEnv({ PORT: String(port), DATA_DIR: dataDir }), port);
    const readyMs = Date.now() - started;

    const ready = await http(base, '/readyz');
    expect(ready.body).toMatchObject({ status: 'ready', database: true, migrations: true });
    const intro = await http(base, '/graphql', { body: { query: '{ __schema { queryType { name } mutationType { name } } }' } });
    expect(intro.status).toBe(200);
    expect(intro.body.data.__schema).toEqual({ queryType: { name: 'Query' }, mutationType: { name: 'Mutation' } });

    // Loud warning: the secrets were generated into DATA_DIR (this start wrote them).
    expect(p.stdout()).toMatch(/DEVELOPMENT SECRETS IN USE: generated into the data folder/);
    expect(existsSync(join(dataDir, 'dev-secrets.json'))).toBe(true);
    // Its own PostgreSQL, under DATA_DIR.
    const pgDir = join(dataDir, 'pg');
    expect(existsSync(join(pgDir, 'postmaster.pid'))).toBe(true);
    expect(processesMatching(pgDir).length).toBeGreaterThan(0);

    const stopAt = Date.now();
    p.child.kill('SIGINT');
    const { code, signal } = await exitWithin(p, 15_000);
    const stopMs = Date.now() - stopAt;
    expect({ code, signal }).toEqual({ code: 0, signal: null });
    expect(stopMs).toBeLessThan(10_000);
    expect(p.stdout()).toMatch(/stopped cleanly/);
    // Nothing left behind: no postgres (or anything else) on that data folder, no pid file.
    expect(processesMatching(dataDir)).toEqual([]);
    expect(existsSync(join(pgDir, 'postmaster.pid'))).toBe(false);
    expect(existsSync(join(dataDir, 'embedded-pg.json'))).toBe(false);
    expect(`${p.stdout()}${p.stderr()}`).not.toMatch(/"level":(50|60)/);
    console.info(`empty-env boot → ready in ${readyMs} ms; SIGINT → exit in ${stopMs} ms`);

    // A second start on the same data folder reads the secrets it finds: it must not claim it generated them.
    const second = await startMain(bareEnv({ PORT: String(port), DATA_DIR: dataDir }), port);
    expect(second.p.stdout()).toMatch(/DEVELOPMENT SECRETS IN USE: read from the data folder/);
    expect(second.p.stdout()).not.toMatch(/generated into/);
    second.p.child.kill('SIGINT');
    expect(await exitWithin(second.p, 15_000)).toMatchObject({ code: 0, signal: null });
    expect(second.p.stdout()).toMatch(/stopped cleanly/);
  }, 240_000);
});

describe('SIGTERM with an open graphql-ws connection (role=all)', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db?.drop());

  it('closes the socket, drains, stops the scheduler and exits 0', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'cpg-life-'));
    dirs.push(dataDir);
    const port = await freePort();
    const { p, base } = await startMain(
      bareEnv({
        PORT: String(port),
        DATA_DIR: dataDir,
        ROLE: 'all',
        NODE_ENV: 'test',
        DATABASE_URL: db.url,
        MASTER_KEY: TEST_MASTER_KEY,
        JWT_SECRET: TEST_JWT_SECRET,
        DEV_CHAINS: 'false',
        RATE_SOURCES: 'none',
      }),
      port,
    );
    expect(p.stdout()).not.toMatch(/DEVELOPMENT SECRETS IN USE/);
    await p.waitForOutput(/job scheduler started/, 15_000);

    // A raw graphql-transport-ws client: connection_init → ack → one query → socket stays open.
    const ws = new WebSocket(`${base.replace(/^http/, 'ws')}/graphql`, 'graphql-transport-ws');
    const messages: { type: string; id?: string; payload?: unknown }[] = [];
    const waitFor = (type: string) =>
      new Promise<void>((ok, fail) => {
        const timer = setTimeout(() => fail(new Error(`no ${type} message; got ${JSON.stringify(messages)}`)), 5000);
        const check = () => {
          if (messages.some((m) => m.type === type)) {
            clearTimeout(timer);
            ok();
          } else setTimeout(check, 10);
        };
        check();
      });
    ws.on('message', (d) => messages.push(JSON.parse(String(d)) as { type: string }));
    const closed = new Promise<{ code: number; reason: string }>((ok) => ws.on('close', (code, reason) => ok({ code, reason: String(reason) })));
    await new Promise<void>((ok, fail) => {
      ws.once('open', () => ok());
      ws.once('error', fail);
    });
    ws.send(JSON.stringify({ type: 'connection_init', payload: {} }));
    await waitFor('connection_ack');
    ws.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: '{ __typename }' } }));
    await waitFor('complete');
    expect(messages.find((m) => m.type === 'next')?.payload).toEqual({ data: { __typename: 'Query' } });
    expect(ws.readyState).toBe(WebSocket.OPEN);

    p.child.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const close = await Promise.race([closed, new Promise<never>((_, fail) => (timer = setTimeout(() => fail(new Error('socket not closed')), 10_000)))]);
    clearTimeout(timer);
    expect(close.code).toBe(1001);
    const { code, signal } = await exitWithin(p, 15_000);
    expect({ code, signal }).toEqual({ code: 0, signal: null });
    expect(p.stdout()).toMatch(/"signal":"SIGTERM"/);
    expect(p.stdout()).toMatch(/stopped cleanly/);
    // The port is free again.
    await expect(fetch(`${base}/healthz`)).rejects.toThrow();
  }, 120_000);
});
