import { resolve } from 'node:path';
import { bareEnv, exitWithin, ROOT, spawnProcess } from './process';

export interface OwnPostgres {
  url: string;
  /** Stops the server (a clean shutdown) and waits for it to be gone. */
  stop(): Promise<void>;
}

/**
 * A PostgreSQL of a test's own (the built `startEmbeddedPostgres`, in a child process: the package is
 * ESM-only and jest cannot load it), with its cluster under `dir` on a fixed `port` — so it can be
 * stopped and started again under a running gateway. Never the machine's shared server.
 */
export async function startOwnPostgres(dir: string, port: number): Promise<OwnPostgres> {
  const script = `
    const { startEmbeddedPostgres } = require(${JSON.stringify(resolve(ROOT, 'dist/src/db/embedded-postgres.js'))});
    startEmbeddedPostgres(${JSON.stringify(dir)}, 'gateway', undefined, { port: ${port} }).then((db) => {
      process.stdout.write('URL ' + db.url + '\\n');
      process.on('SIGTERM', () => db.stop().then(() => process.exit(0), () => process.exit(1)));
    }, (err) => { console.error(err); process.exit(1); });
    setInterval(() => undefined, 1 << 30);`;
  const p = spawnProcess(process.execPath, ['-e', script], bareEnv());
  const line = await p.waitForOutput(/URL \S+/, 60_000);
  return {
    url: line.slice(4),
    stop: async () => {
      p.child.kill('SIGTERM');
      await exitWithin(p, 30_000).catch(async () => p.kill());
    },
  };
}
