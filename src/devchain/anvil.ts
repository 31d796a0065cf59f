import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

export interface AnvilOptions {
  chainId: number;
  /** Initial base fee in wei; 0 makes a BSC-like chain where legacy gas prices of 0 are accepted. */
  baseFee?: bigint | number;
  /** Seconds between blocks; omitted = automine (a block per transaction). */
  blockTime?: number;
  host?: string;
  /**
   * How long to wait for the "Listening on" line before giving up (default 120 s: on a loaded machine
   * anvil took over 30 s to print it, and `npm start` or a test failed for nothing).
   */
  startTimeoutMs?: number;
  /** Extra CLI flags, passed through unchanged. */
  extraArgs?: string[];
}

export interface AnvilInstance {
  rpcUrl: string;
  wsUrl: string;
  chainId: number;
  port: number;
  /** Kills the node and resolves once it has exited. Safe to call more than once. */
  stop(): Promise<void>;
}

/** Absolute path of the anvil binary shipped in `@foundry-rs/anvil-linux-amd64`. */
export function anvilBinaryPath(): string {
  const pkgJson = require.resolve('@foundry-rs/anvil-linux-amd64/package.json');
  return path.join(path.dirname(pkgJson), 'bin', 'anvil');
}

/*
 * Orphan guard. anvil is started under a tiny sh supervisor whose stdin is a pipe from us: when this
 * process dies for any reason (including SIGKILL, which runs no JS), the pipe closes, `read` returns
 * and the supervisor kills anvil. If anvil exits by itself the supervisor exits with its code.
 * The supervisor leads its own process group so a last-resort kill(-pgid) takes both.
 */
// (Background jobs of a non-interactive sh get stdin from /dev/null, hence the pipe is passed on fd 3.)
const SUPERVISOR = [
  'exec 3<&0',
  '"$0" "$@" </dev/null 3<&- & a=$!',
  '(read _ignored <&3; kill $a 2>/dev/null) & w=$!',
  'exec 3<&-',
  'wait $a; code=$?',
  'kill $w 2>/dev/null',
  'exit $code',
].join('\n');

const live = new Set<ChildProcess>();
let exitHookInstalled = false;

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // group already gone
  }
}

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // 'exit' handlers must be synchronous: a group SIGKILL is the only thing that fits
  process.on('exit', () => {
    for (const child of live) killGroup(child, 'SIGKILL');
  });
}

/**
 * Starts anvil on a free port (`--port 0`) and resolves once it accepts connections. The child is
 * unref'd: it does not keep this process alive by itself (a server or test runner does), and it dies
 * with this process however that exits.
 */
export async function startAnvil(opts: AnvilOptions): Promise<AnvilInstance> {
  const host = opts.host ?? '127.0.0.1';
  const args = ['--port', '0', '--host', host, '--chain-id', String(opts.chainId)];
  if (opts.baseFee !== undefined) args.push('--base-fee', String(opts.baseFee));
  if (opts.blockTime !== undefined) args.push('--block-time', String(opts.blockTime));
  if (opts.extraArgs) args.push(...opts.extraArgs);

  installExitHook();
  const child = spawn('sh', ['-c', SUPERVISOR, anvilBinaryPath(), ...args], {
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true,
  });
  live.add(child);
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => {
      live.delete(child);
      resolve();
    });
  });
  // the pipe must stay open (it is the orphan guard) but must not keep our event loop alive
  unrefStream(child.stdin);
  child.stdin?.on('error', () => undefined);
  child.unref();

  // Without --silent anvil logs every RPC method name; --silent/-q also hide the port line we need.
  // So keep draining stdout (a full pipe would stall anvil) and remember a little for error messages.
  let tail = '';
  const remember = (chunk: Buffer): void => {
    tail = (tail + chunk.toString('utf8')).slice(-4000);
  };
  child.stderr?.on('data', remember);

  const port = await new Promise<number>((resolve, reject) => {
    let buffered = '';
    const limitMs = opts.startTimeoutMs ?? 120_000;
    const timer = setTimeout(() => fail(new Error(`anvil did not start within ${limitMs} ms`)), limitMs);
    const onData = (chunk: Buffer): void => {
      remember(chunk);
      buffered += chunk.toString('utf8');
      const m = /Listening on [^\s:]+:(\d+)/.exec(buffered);
      if (m) {
        cleanup();
        resolve(Number(m[1]));
      } else if (buffered.length > 64_000) {
        buffered = buffered.slice(-1000);
      }
    };
    const onExit = (code: number | null, signal: NodeJS.Signals | null): void =>
      fail(new Error(`anvil exited before listening (code ${code}, signal ${signal})`));
    const onError = (err: Error): void => fail(err);
    function cleanup(): void {
      clearTimeout(timer);
      child.stdout?.off('data', onData);
      child.off('exit', onExit);
      child.off('error', onError);
    }
    function fail(err: Error): void {
      cleanup();
      killGroup(child, 'SIGKILL');
      reject(new Error(`${err.message}\n${tail.trim()}`));
    }
    child.stdout?.on('data', onData);
    child.once('exit', onExit);
    child.once('error', onError);
  });
  child.stdout?.on('data', remember);
  unrefStream(child.stdout);
  unrefStream(child.stderr);

  let stopping: Promise<void> | null = null;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      if (child.exitCode === null && child.signalCode === null) {
        // closing stdin is the supervisor's cue to SIGTERM anvil and exit with it
        child.stdin?.end();
        const timer = setTimeout(() => killGroup(child, 'SIGKILL'), 3000);
        await exited;
        clearTimeout(timer);
      }
      child.stdout?.destroy();
      child.stderr?.destroy();
    })();
    return stopping;
  };

  const addr = host.includes(':') ? `[${host}]` : host;
  return { rpcUrl: `http://${addr}:${port}`, wsUrl: `ws://${addr}:${port}`, chainId: opts.chainId, port, stop };
}

function unrefStream(stream: unknown): void {
  // child stdio streams are net.Sockets at runtime, but typed as plain streams
  (stream as { unref?: () => void } | null)?.unref?.();
}
