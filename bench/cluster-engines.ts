/**
 * The engines of the cluster of docs/deploy.md, as the Debian packages install them: PostgreSQL 15
 * (`initdb`, `pg_ctl`, `pg_basebackup`), PgBouncer and HAProxy, each started in a folder of its own on
 * free ports (never the machine's shared server). As root, PostgreSQL and PgBouncer run as the
 * `postgres` user (both refuse root). Used by the cluster drills (test/support/cluster.ts) and
 * `npm run bench:cluster`.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, chownSync, mkdirSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { join } from 'node:path';
import pg from 'pg';

/** A minimal environment for the engines: PATH and HOME only, plus `extra`. */
export const bareEnv = (extra: Record<string, string | undefined> = {}): Record<string, string> =>
  Object.fromEntries(
    Object.entries({ PATH: process.env.PATH, HOME: process.env.HOME ?? '/root', ...extra }).filter((e): e is [string, string] => e[1] !== undefined),
  );

export interface EngineProcess {
  child: ChildProcess;
  output(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves when `re` appears in the output (stdout or stderr). */
  waitForOutput(re: RegExp, timeoutMs: number): Promise<void>;
  kill(): Promise<void>;
}

export function startEngine(command: string, args: string[], env: Record<string, string>, cwd: string): EngineProcess {
  const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString('utf8')));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString('utf8')));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((ok) => child.once('exit', (code, signal) => ok({ code, signal })));
  return {
    child,
    output: () => out,
    exited,
    waitForOutput: async (re, timeoutMs) => {
      const deadline = Date.now() + timeoutMs;
      while (!re.test(out)) {
        if (child.exitCode !== null || child.signalCode !== null) throw new Error(`${command} exited before ${re}:\n${out.slice(-3000)}`);
        if (Date.now() > deadline) throw new Error(`${command}: no ${re} within ${timeoutMs} ms:\n${out.slice(-3000)}`);
        await sleep(50);
      }
    },
    kill: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL');
        await exited;
      }
    },
  };
}

async function runProcess(
  command: string,
  args: string[],
  env: Record<string, string>,
  timeoutMs: number,
  cwd: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const p = startEngine(command, args, env, cwd);
  const timer = setTimeout(() => void p.kill(), timeoutMs);
  const { code } = await p.exited;
  clearTimeout(timer);
  return { code, stdout: p.output(), stderr: '' };
}

/** Polls `url` until it answers 200. */
export async function waitForHttp(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  for (;;) {
    try {
      const res = await fetch(url);
      await res.arrayBuffer();
      if (res.status === 200) return;
      last = `HTTP ${res.status}`;
    } catch (e) {
      last = (e as Error).message;
    }
    if (Date.now() > deadline) throw new Error(`${url} did not answer 200 within ${timeoutMs} ms (last: ${last})`);
    await sleep(100);
  }
}

export const PG_BIN = '/usr/lib/postgresql/15/bin';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => ok(port));
    });
  });
}

const asRoot = process.getuid?.() === 0;
let pgIds: { uid: number; gid: number } | undefined;
function postgresIds(): { uid: number; gid: number } {
  pgIds ??= { uid: Number(execFileSync('id', ['-u', 'postgres']).toString().trim()), gid: Number(execFileSync('id', ['-g', 'postgres']).toString().trim()) };
  return pgIds;
}
/** A command as the `postgres` user when we are root (the server refuses to run as root). */
function asPostgres(cmd: string, args: string[]): [string, string[]] {
  return asRoot ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]] : [cmd, args];
}
export function ownByPostgres(path: string): void {
  if (asRoot) chownSync(path, postgresIds().uid, postgresIds().gid);
}
export async function runAsPostgres(cmd: string, args: string[], timeoutMs = 120_000): Promise<string> {
  const [c, a] = asPostgres(cmd, args);
  const r = await runProcess(c, a, bareEnv({ LANG: 'C.UTF-8' }), timeoutMs, '/');
  if (r.code !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.code}):\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

export interface PgServer {
  name: string;
  dir: string;
  port: number;
  url(db?: string): string;
  /** `pg_ctl stop` (`immediate`: as a crash would, no shutdown checkpoint). */
  stop(mode?: 'fast' | 'immediate'): Promise<void>;
}

export function pgServer(name: string, dir: string, port: number): PgServer {
  return {
    name,
    dir,
    port,
    url: (db = 'gateway') => `postgres://postgres@127.0.0.1:${port}/${db}`,
    stop: async (mode = 'fast') => {
      await runAsPostgres(`${PG_BIN}/pg_ctl`, ['-D', dir, '-m', mode, '-w', '-t', '60', 'stop']).catch(() => undefined);
    },
  };
}

export async function startPg(s: PgServer): Promise<void> {
  await runAsPostgres(`${PG_BIN}/pg_ctl`, ['-D', s.dir, '-l', join(s.dir, 'server.log'), '-w', '-t', '120', 'start']);
}

/** psql-free admin queries on one server (the `pg` client). */
export async function pgQuery<T>(url: string, sql: string, params: unknown[] = []): Promise<T[]> {
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  c.on('error', () => undefined);
  await c.connect();
  try {
    return (await c.query(sql, params)).rows as T[];
  } finally {
    await c.end().catch(() => undefined);
  }
}

/** A primary in `<dir>/primary` with a `gateway` database, ready for streaming replication. */
export async function startPrimary(dir: string): Promise<PgServer> {
  const primary = pgServer('primary', join(dir, 'primary'), await freePort());
  mkdirSync(primary.dir, { mode: 0o700 });
  ownByPostgres(primary.dir);
  await runAsPostgres(`${PG_BIN}/initdb`, ['-D', primary.dir, '-U', 'postgres', '-A', 'trust', '--no-sync', '-E', 'UTF8']);
  appendFileSync(
    join(primary.dir, 'postgresql.conf'),
    [
      '',
      `port = ${primary.port}`,
      "listen_addresses = '127.0.0.1'",
      `unix_socket_directories = '${primary.dir}'`,
      'max_connections = 300',
      'shared_buffers = 64MB',
      'wal_level = replica',
      'max_wal_senders = 5',
      'wal_keep_size = 256MB',
      'hot_standby = on',
      'synchronous_commit = on',
      // the machine's page cache is the disk here; durability across a promotion is the standby's
      'fsync = off',
      'full_page_writes = off',
      '',
    ].join('\n'),
  );
  await startPg(primary);
  try {
    await pgQuery(primary.url('postgres'), 'create database gateway');
  } catch (err) {
    await primary.stop('immediate');
    throw err;
  }
  return primary;
}

/**
 * A streaming standby of `primary` in `<dir>/standby` from a base backup (`pg_basebackup -R`), named
 * `name` (its application_name on the primary). Once it streams, the primary is made to wait for it
 * at every commit (`synchronous_standby_names`, set only now: commits before it would hang), and this
 * resolves when the primary lists it as `sync`. It has no synchronous standby of its own: promoted, it
 * runs alone until a new standby is built.
 */
export async function startStandby(dir: string, primary: PgServer, name: string): Promise<PgServer> {
  const standby = pgServer('standby', join(dir, 'standby'), await freePort());
  mkdirSync(standby.dir, { mode: 0o700 });
  ownByPostgres(standby.dir);
  await runAsPostgres(`${PG_BIN}/pg_basebackup`, [
    '-h',
    '127.0.0.1',
    '-p',
    String(primary.port),
    '-U',
    'postgres',
    '-D',
    standby.dir,
    '-R',
    '-X',
    'stream',
    '--no-sync',
  ]);
  appendFileSync(
    join(standby.dir, 'postgresql.auto.conf'),
    `\nport = ${standby.port}\nunix_socket_directories = '${standby.dir}'\nsynchronous_standby_names = ''\nprimary_conninfo = 'host=127.0.0.1 port=${primary.port} user=postgres application_name=${name}'\n`,
  );
  await startPg(standby);
  let synchronous = false;
  for (let i = 0; ; i++) {
    const rows = await pgQuery<{ sync_state: string }>(primary.url('postgres'), `select sync_state from pg_stat_replication where application_name = $1`, [
      name,
    ]);
    if (rows[0]?.sync_state === 'sync') break;
    if (rows[0] && !synchronous) {
      await pgQuery(primary.url('postgres'), `alter system set synchronous_standby_names = '${name}'`);
      await pgQuery(primary.url('postgres'), 'select pg_reload_conf()');
      synchronous = true;
    }
    if (i > 1200) {
      await standby.stop('immediate');
      throw new Error(`the standby ${name} did not become a synchronous standby`);
    }
    await sleep(100);
  }
  return standby;
}

/** `pg_ctl promote` (waits until the server accepts writes). */
export async function promote(standby: PgServer): Promise<void> {
  await runAsPostgres(`${PG_BIN}/pg_ctl`, ['-D', standby.dir, '-w', '-t', '120', 'promote']);
}

export interface PgBouncer {
  port: number;
  /** The transaction pool (DATABASE_URL of every process). */
  url: string;
  /** The session pool (DATABASE_SESSION_URL). */
  sessionUrl: string;
  /** Points both pools at `server` on the admin console (RELOAD, RECONNECT): the repointing of a failover. */
  repoint(server: PgServer): Promise<void>;
  stop(): Promise<void>;
}

export async function startPgBouncer(dir: string, server: PgServer): Promise<PgBouncer> {
  const port = await freePort();
  const ini = join(dir, 'pgbouncer.ini');
  const users = join(dir, 'userlist.txt');
  writeFileSync(users, '"postgres" ""\n');
  const write = (target: PgServer) =>
    writeFileSync(
      ini,
      [
        '[databases]',
        `gateway = host=127.0.0.1 port=${target.port} dbname=gateway pool_mode=transaction pool_size=30`,
        `gateway_session = host=127.0.0.1 port=${target.port} dbname=gateway pool_mode=session pool_size=80`,
        '[pgbouncer]',
        'listen_addr = 127.0.0.1',
        `listen_port = ${port}`,
        'unix_socket_dir =',
        'auth_type = trust',
        `auth_file = ${users}`,
        'admin_users = postgres',
        'pool_mode = transaction',
        'max_client_conn = 1000',
        'ignore_startup_parameters = extra_float_digits,options',
        'server_login_retry = 1',
        'server_connect_timeout = 5',
        'query_wait_timeout = 120',
        '',
      ].join('\n'),
    );
  write(server);
  for (const f of [ini, users]) ownByPostgres(f);
  // PgBouncer drops root itself (`-u`): run under `runuser`, the stop signal reached only the wrapper,
  // and a PgBouncer left behind kept the output pipes open (the test process never ended).
  const p = startEngine('/usr/sbin/pgbouncer', asRoot ? ['-u', 'postgres', ini] : [ini], bareEnv(), '/');
  await p.waitForOutput(/process up|listening on/, 30_000);
  return {
    port,
    url: `postgres://postgres@127.0.0.1:${port}/gateway`,
    sessionUrl: `postgres://postgres@127.0.0.1:${port}/gateway_session`,
    repoint: async (target) => {
      write(target);
      // On the admin console: RELOAD reads the new [databases], RECONNECT closes every server
      // connection as it is released, so each pool's next one goes to the new server. (PAUSE first
      // would wait for the session pool's clients to leave: LISTEN connections never do.)
      const admin = `postgres://postgres@127.0.0.1:${port}/pgbouncer`;
      for (const command of ['RELOAD', 'RECONNECT']) await pgQuery(admin, command);
    },
    stop: async () => {
      p.child.kill('SIGINT');
      await Promise.race([p.exited, sleep(10_000)]);
      await p.kill();
    },
  };
}

export interface HaProxy {
  url: string;
  /** The servers' states as HAProxy sees them (`show stat`: UP, DOWN, …). */
  states(): Promise<Record<string, string>>;
  stop(): Promise<void>;
}

/** One command on HAProxy's admin socket. */
function haproxyCommand(socket: string, command: string): Promise<string> {
  return new Promise((ok, fail) => {
    const conn = connect(socket);
    let out = '';
    conn.on('data', (d: Buffer) => (out += d.toString('utf8')));
    conn.on('end', () => ok(out));
    conn.on('error', fail);
    conn.write(`${command}\n`);
  });
}

export async function startHaProxy(dir: string, apiPorts: number[]): Promise<HaProxy> {
  const port = await freePort();
  const cfg = join(dir, 'haproxy.cfg');
  writeFileSync(
    cfg,
    [
      'global',
      '  maxconn 4000',
      `  stats socket ${join(dir, 'haproxy.sock')} level admin`,
      'defaults',
      '  mode http',
      '  timeout connect 2s',
      '  timeout client 120s',
      '  timeout server 120s',
      '  timeout tunnel 1h',
      '  retries 3',
      '  option redispatch 1',
      '  retry-on conn-failure empty-response',
      'frontend gateway',
      `  bind 127.0.0.1:${port}`,
      '  default_backend api',
      'backend api',
      '  balance roundrobin',
      '  option http-server-close',
      '  option httpchk GET /readyz',
      '  http-check expect status 200',
      // a check answered within `timeout check`; two failed ones in a row take a server out
      '  timeout check 10s',
      '  default-server inter 500ms fall 2 rise 1',
      ...apiPorts.map((p, i) => `  server api${i + 1} 127.0.0.1:${p} check`),
      '',
    ].join('\n'),
  );
  const p = startEngine('/usr/sbin/haproxy', ['-f', cfg, '-db'], bareEnv(), dir);
  const url = `http://127.0.0.1:${port}`;
  await waitForHttp(`${url}/readyz`, 120_000).catch(async (e: unknown) => {
    await p.kill();
    throw new Error(`${(e as Error).message}\n${p.output()}`);
  });
  return {
    url,
    states: async () => {
      const [header, ...rows] = (await haproxyCommand(join(dir, 'haproxy.sock'), 'show stat')).trim().split('\n');
      const cols = header!.replace(/^# /, '').split(',');
      const [px, sv, st] = ['pxname', 'svname', 'status'].map((n) => cols.indexOf(n));
      return Object.fromEntries(
        rows
          .map((r) => r.split(','))
          .filter((r) => r[px!] === 'api' && r[sv!] !== 'BACKEND')
          .map((r) => [r[sv!]!, r[st!]!]),
      );
    },
    stop: async () => {
      p.child.kill('SIGTERM');
      await Promise.race([p.exited, sleep(5000)]);
      await p.kill();
    },
  };
}
