/**
 * `/readyz` in the sandbox (`npm start`'s configuration: role all, DEV_CHAINS on): the HTTP server
 * answers while the four local chains are still starting, and says so — 503 in the envelope, naming
 * the watchers — until the chains and their watchers run; then 200. Polled from the moment the
 * gateway starts, against the real start-up (embedded chains, Agenda, PostgreSQL).
 */
import { freePort } from '../../src/db/embedded-postgres';
import { startTestGateway, type TestGateway } from '../support/gateway';

jest.setTimeout(180_000);

let gw: TestGateway | undefined;
afterAll(() => gw?.close());

it('503 "not ready: watchers" in the envelope while the local chains start; 200 once they and their watchers run', async () => {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const seen: { status: number; body: Record<string, unknown>; startedYet: boolean }[] = [];
  // startedYet: whether startGateway had resolved when the answer arrived.
  let started = false;
  const starting = startTestGateway({ PORT: String(port), DEV_CHAINS: 'true', ROLE: 'all' }).then((g) => {
    started = true;
    gw = g;
    return g;
  });
  starting.catch(() => undefined);
  // Poll until the gateway has finished starting (connection refused until HTTP listens).
  while (!started) {
    try {
      const res = await fetch(`${base}/readyz`);
      seen.push({ status: res.status, body: (await res.json()) as Record<string, unknown>, startedYet: started });
    } catch {
      // not listening yet
    }
    await Promise.race([starting.then(() => undefined), new Promise((r) => setTimeout(r, 25))]);
  }
  await starting;

  const notReady = seen.filter((s) => s.status === 503);
  expect(notReady.length).toBeGreaterThan(0);
  expect(notReady[0]!.body).toMatchObject({
    status_code: 503,
    message: expect.stringMatching(/^Not ready: waiting for .*watchers/),
    data: { status: 'not_ready', watchers: false },
    status: 'not_ready',
    watchers: false,
  });
  // Not ready, then ready, never back: once it said ready the watchers were running (the last start step
  // after them, the webhook loop, may still be finishing).
  const firstReady = seen.findIndex((s) => s.status === 200);
  if (firstReady >= 0) expect(seen.slice(firstReady).every((s) => s.status === 200 && s.body.watchers === true)).toBe(true);
  expect(seen.slice(0, firstReady >= 0 ? firstReady : seen.length).every((s) => s.status === 503 && !s.startedYet)).toBe(true);

  const ready = await fetch(`${base}/readyz`);
  expect(ready.status).toBe(200);
  expect(await ready.json()).toMatchObject({ status_code: 200, message: 'Ready', data: { status: 'ready', database: true, migrations: true, watchers: true }, status: 'ready' });
  // ...and "ready" means the four chains answer and are watched.
  expect(Object.keys(gw!.sandboxChains!.rpcUrls).sort()).toEqual(['BINANCE', 'ETHEREUM', 'SOLANA', 'TRON']);
  const nets = (await (await fetch(`${base}/api/v2/testnet/networks`)).json()) as { data: { networks: { name: string; tokens: unknown[] }[] } };
  expect(nets.data.networks.map((n) => n.name).sort()).toEqual(['BINANCE', 'ETHEREUM', 'SOLANA', 'TRON']);
  expect(nets.data.networks.every((n) => n.tokens.length >= 2)).toBe(true);
  console.info(`readyz: ${notReady.length} not-ready answers before ready`);
});
