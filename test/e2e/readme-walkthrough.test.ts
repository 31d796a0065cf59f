/**
 * The README's walkthrough, run as written. The `sh` block after `<!-- walkthrough -->`
 * in README.md is handed to bash unchanged (so README and test cannot drift) against a started
 * gateway with the sandbox's local chains; only what the README says a reader may vary differs
 * (`GATEWAY`, `HOOK_PORT`), plus the environment that points the CLI at this gateway's database,
 * data folder and secrets. It must end on its own: the order reaches Success (the walkthrough waits
 * for the status, no fixed sleep), `getOrder`'s message names that status, and the webhook receiver
 * gets the Success webhook and ends.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../src/db/embedded-postgres';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { processesMatching, ROOT } from '../support/process';
import { TEST_JWT_SECRET, TEST_MASTER_KEY } from '../support/secrets';

jest.setTimeout(1_200_000);

const dataDir = mkdtempSync(join(tmpdir(), 'cpg-readme-'));
let gw: TestGateway | undefined;
afterAll(async () => {
  await gw?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

/** The walkthrough: the first ```sh block after the marker. */
function walkthrough(): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const at = readme.indexOf('<!-- walkthrough -->');
  expect(at).toBeGreaterThan(-1);
  const block = /```sh\n([\s\S]*?)\n```/.exec(readme.slice(at));
  expect(block).not.toBeNull();
  return block![1]!;
}

it('the README walkthrough, run verbatim: order paid, getOrder says so, the webhook arrives', async () => {
  const script = walkthrough();
  expect(script).not.toMatch(/^sleep [0-9]/m); // waits for the status, never for a fixed time
  // `npm start`'s job settings (the test gateway's short locks are for fast stops): on a loaded machine a
  // watcher run outlasts a 4 s lock, is cancelled, and the order never settles.
  gw = await startTestGateway(
    { PORT: String(await freePort()), DEV_CHAINS: 'true', ROLE: 'all', DATA_DIR: dataDir, WATCH_LOCK_MS: '60000' },
    { scheduler: { processEveryMs: 500, lockLifetimeMs: 60_000 } },
  );
  const hookPort = await freePort();
  const child = spawn('bash', ['-e', '-o', 'pipefail', '-c', script], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '/root',
      GATEWAY: gw.url,
      HOOK_PORT: String(hookPort),
      // the CLI joins this gateway: its database, data folder (the local chains' URLs) and secrets
      DATABASE_URL: gw.db.url,
      DATA_DIR: dataDir,
      MASTER_KEY: TEST_MASTER_KEY,
      JWT_SECRET: TEST_JWT_SECRET,
      RATE_SOURCES: 'none',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const closed = new Promise<void>((ok) => child.once('close', () => ok()));
  // 'exit' first: if the script fails early, its background receiver holds the pipes open until it is ended.
  const code = await new Promise<number | null>((ok) => child.once('exit', (c) => ok(c)));
  for (const pid of processesMatching(`.listen(process.argv[1]) ${hookPort}`)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  await closed; // every writer gone: all output read
  const context = `stdout:\n${out.slice(-4000)}\nstderr:\n${err.slice(-4000)}`;
  expect({ code, context }).toEqual({ code: 0, context });

  // The QR answer, the paid order with a message naming its status, then the Success webhook.
  expect(out).toMatch(/"message":"QR created"/);
  const orders = out.split('\n').filter((l) => l.includes('"message":"Order found'));
  expect(orders.length).toBeGreaterThan(0);
  const last = JSON.parse(orders.at(-1)!) as { message: string; data: { request: { status: string } } };
  expect(last).toMatchObject({ message: 'Order found (status Success)', data: { request: { status: 'Success' } } });
  const hooks = out.split('\n').filter((l) => l.startsWith('webhook: '));
  const success = hooks
    .map((l) => JSON.parse(l.slice('webhook: '.length)) as { data: { status: string; order_no?: string } })
    .find((h) => h.data.status === 'Success');
  expect(success).toBeDefined();
});
