/**
 * Job locks across stops and crashes. Locks carry their owner (the scheduler's name in
 * `last_modified_by`), and each scheduler keeps a presence connection to PostgreSQL:
 * - a clean stop leaves no locked job, even a run that did not return within the drain timeout;
 * - a worker killed with SIGKILL leaves its watcher locked, and the next scheduler to start takes it
 *   back at once (and says so) — with a lock lifetime of 10 minutes, far beyond this test's bound, so
 *   only the take-back can make the watcher run again here.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { Writable } from 'node:stream';
import { watchedNetworks } from '../../src/chains/networks';
import { DEV_SWEEP_CONTRACTS, startAnvil, type AnvilInstance } from '../../src/devchain';
import { startScheduler, type JobDefinition, type Scheduler } from '../../src/jobs/scheduler';
import { watchChainJobs } from '../../src/jobs/watch-chain.job';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { eventually, sql } from '../support/evm-harness';
import { spawnBuiltWorker, requireDist, type Spawned } from '../support/process';

jest.setTimeout(300_000);

/** The longest lock lifetime the config allows: waiting it out would fail the test's bounds. */
const LOCK_MS = 600_000;
const WATCHER = 'watch-chain:sandbox:ETHEREUM';

let api: TestGateway;
let anvil: AnvilInstance;
const dataDir = mkdtempSync(join(tmpdir(), 'cpg-takeover-'));
const started: Scheduler[] = [];
let worker: Spawned | undefined;

beforeAll(async () => {
  requireDist();
  anvil = await startAnvil({ chainId: 31337 });
  api = await startTestGateway({ ROLE: 'api', WATCH_LOCK_MS: String(LOCK_MS), WATCH_RUN_MS: '600000', WATCH_POLL_MS: '200' });
});
afterEach(async () => {
  await Promise.all(started.splice(0).map((s) => s.stop()));
  await worker?.kill();
  worker = undefined;
});
afterAll(async () => {
  await api?.close();
  await anvil?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

const locked = (name?: string) =>
  sql<{ name: string; owner: string | null }>(
    api.app,
    `select name, last_modified_by as owner from agenda_jobs where locked_at is not null${name ? ' and name = ?' : ''}`,
    name ? [name] : [],
  );

/** A log that keeps its lines, to find what the scheduler said. */
function capturingLog(): { log: pino.Logger; lines: () => string } {
  let out = '';
  const log = pino(
    { level: 'info' },
    new Writable({
      write(chunk: Buffer, _enc, cb) {
        out += chunk.toString();
        cb();
      },
    }),
  );
  return { log, lines: () => out };
}

/** The real watcher of sandbox ETHEREUM on the local anvil, its runs counted. */
function countedWatcher(runs: { n: number }): JobDefinition {
  const [target] = watchedNetworks(api.app.config, { 'sandbox:ETHEREUM': [anvil.rpcUrl] }, { localSweepContracts: DEV_SWEEP_CONTRACTS }).filter(
    (n) => n.environment === 'sandbox' && n.network === 'ETHEREUM',
  );
  const [def] = watchChainJobs([target!], LOCK_MS);
  return {
    ...def!,
    handler: async (app, job, signal) => {
      runs.n++;
      await def!.handler(app, job, signal);
    },
  };
}

it('a clean stop leaves no locked job, even a run that outlives the drain timeout', async () => {
  let release!: () => void;
  const stubborn = new Promise<void>((r) => (release = r));
  const slow: JobDefinition = {
    name: 'takeover-test:ignores-abort',
    every: '1 hour',
    lockLifetimeMs: LOCK_MS,
    handler: () => stubborn, // does not return on abort: stop() gives up on it after the drain timeout
  };
  const s = await startScheduler(api.app, api.databaseUrl, [slow], { processEveryMs: 200, drainTimeoutMs: 500 });
  started.push(s);
  await eventually(async () => (await locked(slow.name)).length === 1, 'the slow job is running and locked', 60_000);
  expect((await locked(slow.name))[0]!.owner).toBe(s.owner);
  started.splice(started.indexOf(s), 1);
  await s.stop();
  release();
  expect(await locked()).toEqual([]);
});

it('after SIGKILL of the worker running the watcher, the next scheduler takes it back at once and says so', async () => {
  worker = await spawnBuiltWorker({
    databaseUrl: api.databaseUrl,
    dataDir,
    env: { SANDBOX_ETHEREUM_RPC_URLS: anvil.rpcUrl, WATCH_LOCK_MS: String(LOCK_MS), WATCH_RUN_MS: '600000', WATCH_POLL_MS: '200' },
  });
  const ownerOf = async () => (await locked(WATCHER))[0]?.owner ?? null;
  await eventually(async () => (await ownerOf()) !== null, 'the worker holds the watcher lock', 120_000);
  const deadOwner = await ownerOf();
  expect(deadOwner).toMatch(new RegExp(`:${worker.child.pid}:`));

  worker.child.kill('SIGKILL');
  await worker.exited;
  // PostgreSQL notices the closed connection of the dead process: its presence ends.
  await eventually(
    async () =>
      (await sql<{ n: number }>(api.app, `select count(*)::int as n from pg_stat_activity where application_name = ?`, [`cpg-owner:${deadOwner}`]))[0]!.n === 0,
    'the dead worker’s presence connection is gone',
    60_000,
  );
  expect(await ownerOf()).toBe(deadOwner); // still locked: without the take-back it would stay so for 10 minutes

  const runs = { n: 0 };
  const { log, lines } = capturingLog();
  const s = await startScheduler(api.app, api.databaseUrl, [countedWatcher(runs)], { processEveryMs: 200 }, log);
  started.push(s);
  await eventually(async () => runs.n > 0, 'the new scheduler runs the watcher', 60_000);
  expect(await ownerOf()).toBe(s.owner);
  expect(lines()).toMatch(/took back the jobs locked by owners that are no longer alive/);
  expect(lines()).toContain(deadOwner!);
});

it('a live owner’s locks are left alone by a scheduler starting beside it', async () => {
  const runsA = { n: 0 };
  const a = await startScheduler(api.app, api.databaseUrl, [countedWatcher(runsA)], { processEveryMs: 200 });
  started.push(a);
  await eventually(async () => runsA.n > 0, 'the first scheduler runs the watcher', 60_000);
  const runsB = { n: 0 };
  const b = await startScheduler(api.app, api.databaseUrl, [countedWatcher(runsB)], { processEveryMs: 200 });
  started.push(b);
  // Ten of b's polls later, the watcher is still a's alone (b found a alive at its start).
  await new Promise((r) => setTimeout(r, 2000));
  expect(runsB.n).toBe(0);
  expect((await locked(WATCHER))[0]?.owner).toBe(a.owner);
});
