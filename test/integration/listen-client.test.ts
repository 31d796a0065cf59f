import pg from 'pg';
import pino from 'pino';
import { ListenClient } from '../../src/db/listen.client';
import { createTestDatabase, type TestDatabase } from '../support/db';

/**
 * The one reconnecting LISTEN connection (API events, webhook wake-ups): per-channel handlers, and
 * after the connection is killed it reconnects, LISTENs again and asks every handler to resync.
 */
let db: TestDatabase;
let admin: pg.Client;
const clients: ListenClient[] = [];
beforeAll(async () => {
  db = await createTestDatabase();
  admin = new pg.Client(db.url);
  await admin.connect();
});
afterAll(async () => {
  for (const c of clients) await c.close();
  await admin?.end();
  await db?.drop();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until(cond: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await sleep(10);
  }
}

function recorder() {
  const got: (string | undefined)[] = [];
  let resyncs = 0;
  return { got, resyncs: () => resyncs, handler: { notify: (p: string | undefined) => void got.push(p), resync: () => void resyncs++ } };
}

it('routes each channel to its handler, reconnects after pg_terminate_backend and resyncs every handler', async () => {
  const a = recorder();
  const b = recorder();
  const listen = new ListenClient({ connectionString: db.url, log: pino({ level: 'silent' }), name: 'cpg-test-listen', initialBackoffMs: 50 })
    .on('chan_a', a.handler)
    .on('chan_b', b.handler);
  clients.push(listen);
  await listen.start();
  await admin.query(`select pg_notify('chan_a', 'one'), pg_notify('chan_b', 'two')`);
  await until(() => a.got.length === 1 && b.got.length === 1);
  expect([a.got, b.got]).toEqual([['one'], ['two']]);
  expect(a.resyncs() + b.resyncs()).toBe(0);

  const pid = listen.backendPid;
  await admin.query('select pg_terminate_backend($1)', [pid]);
  await until(() => listen.listening && listen.backendPid !== pid);
  expect(listen.connections).toBe(2);
  await until(() => a.resyncs() === 1 && b.resyncs() === 1);

  // LISTEN was issued again on the new connection, and a channel added later is heard at once.
  const c = recorder();
  listen.on('chan_c', c.handler);
  await sleep(100);
  await admin.query(`select pg_notify('chan_a', 'three'), pg_notify('chan_c', 'four')`);
  await until(() => a.got.length === 2 && c.got.length === 1);
  expect([a.got, c.got]).toEqual([['one', 'three'], ['four']]);
});

it('a first connection that fails rejects start() (no unhandled error) and stays down quietly until closed', async () => {
  const a = recorder();
  // A URL that refuses connections: start() must reject (boot fails loudly) without an unhandled 'error'.
  const listen = new ListenClient({
    connectionString: 'postgres://postgres@127.0.0.1:1/none',
    log: pino({ level: 'silent' }),
    name: 'cpg-test-refused',
    initialBackoffMs: 20,
    maxBackoffMs: 40,
  }).on('chan_a', a.handler);
  clients.push(listen);
  await expect(listen.start()).rejects.toThrow(/ECONNREFUSED|connect/);
  await sleep(200);
  expect(listen.listening).toBe(false);
  await listen.close();
});
