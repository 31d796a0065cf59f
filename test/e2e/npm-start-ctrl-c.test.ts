/**
 * Ctrl-C on `npm start` and on `npm run start:dist` (the built program), as a terminal sends it: SIGINT to the whole foreground process group (npm,
 * the launcher `scripts/start.js`, and whatever did not leave the group). The gateway, its embedded
 * PostgreSQL and the four local chains run in their own group, so the signal reaches them only through
 * the launcher: the gateway drains, stops in order and says "stopped cleanly"; nothing is left behind
 * and nothing crashes on the way (no error-level line, no unhandled 'error' event).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../src/db/embedded-postgres';
import { processesMatching, requireDist, ROOT, waitForHttp } from '../support/process';

jest.setTimeout(240_000);

const dataDirs: string[] = [];
afterAll(() => {
  for (const dataDir of dataDirs) {
    for (const pid of processesMatching(dataDir)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    rmSync(dataDir, { recursive: true, force: true });
  }
});

it.each([['start'], ['start:dist']])(
  'SIGINT to the process group of `npm run %s`: drains, stops in order, "stopped cleanly", nothing crashes or is left behind',
  async (script) => {
    if (script === 'start:dist') requireDist();
    const dataDir = mkdtempSync(join(tmpdir(), 'cpg-ctrlc-'));
    dataDirs.push(dataDir);
    const port = await freePort();
    // A process group of its own (detached), as a terminal's foreground job is.
    const child = spawn('npm', ['run', script, '--silent'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root', DATA_DIR: dataDir, PORT: String(port), RATE_SOURCES: 'none' },
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((ok) => child.once('exit', (code, signal) => ok({ code, signal })));
    const outputClosed = new Promise<void>((ok) => child.stdout.once('close', () => ok()));
    try {
      await Promise.race([
        waitForHttp(`http://127.0.0.1:${port}/readyz`, 180_000),
        exited.then(({ code }) => {
          throw new Error(`npm start exited early (${code}):\n${out.slice(-3000)}`);
        }),
      ]);
      expect(existsSync(join(dataDir, 'pg', 'postmaster.pid'))).toBe(true);
      expect(processesMatching(dataDir).length).toBeGreaterThan(0);

      process.kill(-child.pid!, 'SIGINT'); // Ctrl-C: the whole group at once
      // npm itself ends as a shell expects after Ctrl-C (by SIGINT, or 0 once its script exits 0); the gateway,
      // in the launcher's group, keeps writing to the same pipe until it is done: wait until every writer closed it.
      let timer: NodeJS.Timeout | undefined;
      const result = await Promise.race([
        Promise.all([exited, outputClosed]).then(([r]) => r),
        new Promise<never>((_, fail) => (timer = setTimeout(() => fail(new Error(`not stopped within 30 s:\n${out.slice(-3000)}`)), 30_000))),
      ]);
      clearTimeout(timer);
      expect([JSON.stringify({ code: 0, signal: null }), JSON.stringify({ code: null, signal: 'SIGINT' })]).toContain(JSON.stringify(result));

      const lines = out.split('\n');
      const at = (re: RegExp) => lines.findIndex((l) => re.test(l));
      expect(at(/"msg":"shutting down"/)).toBeGreaterThan(-1);
      expect(at(/stopped cleanly/)).toBeGreaterThan(at(/"msg":"shutting down"/));
      // One key press, one shutdown: the relayed duplicates are absorbed, never a forced exit.
      expect(out).not.toMatch(/second signal: exiting now|shutdown took too long|shutdown failed|shutdown step failed/);
      expect(out).not.toMatch(/Unhandled 'error' event|unhandled rejection/i);
      expect(out).not.toMatch(/"level":(50|60)/);
      // The embedded PostgreSQL stopped after the gateway was done with it: no connection of ours was cut (57P01).
      expect(out).not.toMatch(/57P01|terminating connection due to administrator command/);
      // Nothing left: no PostgreSQL or chain on that data folder, no pid or state files.
      expect(processesMatching(dataDir)).toEqual([]);
      expect(existsSync(join(dataDir, 'pg', 'postmaster.pid'))).toBe(false);
      expect(existsSync(join(dataDir, 'devchains.json'))).toBe(false);
    } finally {
      if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGKILL');
    }
  },
);
