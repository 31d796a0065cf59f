/**
 * Start-up time of the sandbox as a new user meets it: `npm start` → `/readyz` ready (database,
 * migrations, the four local chains and their watchers), first on a fresh data folder with no
 * `.build/` (what a fresh clone does after `npm install`), then a second start on the same folder;
 * then one CLI call. Each start is stopped with SIGINT to its process group, as Ctrl-C does, and must
 * log "stopped cleanly". Prints one JSON object. Targets: fresh ≤ 30 s, second ≤ 10 s,
 * CLI ≤ 3 s. Runs on a new database on DATABASE_URL's server, else on an embedded PostgreSQL.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort } from '../src/db/embedded-postgres.js';
import { benchDatabase } from './support.js';

// dist/bench → repository root
const ROOT = resolve(__dirname, '..', '..');

async function startOnce(dataDir: string, databaseUrl: string): Promise<{ readyMs: number; stopMs: number; stoppedCleanly: boolean }> {
  const port = await freePort();
  const env = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    DATA_DIR: dataDir,
    PORT: String(port),
    RATE_SOURCES: 'none',
    DATABASE_URL: databaseUrl,
  };
  const t0 = performance.now();
  const child = spawn('npm', ['start'], { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<void>((ok) => child.once('exit', () => ok()));
  for (;;) {
    if (child.exitCode !== null) throw new Error(`npm start exited early:\n${out.slice(-3000)}`);
    const ready = await fetch(`http://127.0.0.1:${port}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ready) break;
    if (performance.now() - t0 > 180_000) throw new Error(`not ready within 180 s:\n${out.slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const readyMs = performance.now() - t0;
  const s0 = performance.now();
  process.kill(-child.pid!, 'SIGINT');
  await exited;
  return { readyMs: Math.round(readyMs), stopMs: Math.round(performance.now() - s0), stoppedCleanly: out.includes('stopped cleanly') };
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'cpg-startup-bench-'));
  // its own database, so the fresh start applies every migration as a new clone's would
  const db = await benchDatabase('startup_bench');
  rmSync(join(ROOT, '.build'), { recursive: true, force: true });
  const fresh = await startOnce(dataDir, db.url);
  const second = await startOnce(dataDir, db.url);
  await db.release();
  const c0 = performance.now();
  const cli = spawnSync('npm', ['run', 'cli', '--', 'config:docs'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', DATA_DIR: dataDir },
    encoding: 'utf8',
  });
  const cliMs = Math.round(performance.now() - c0);
  rmSync(dataDir, { recursive: true, force: true });
  console.log(JSON.stringify({ fresh, second, cli: { ms: cliMs, ok: cli.status === 0 }, targets: { freshMs: 30_000, secondMs: 10_000, cliMs: 3000 } }));
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
