/**
 * `/readyz` in the sandbox (`npm start`'s configuration: role all, DEV_CHAINS on): the HTTP server
 * answers while the four local chains are still starting, and says so — 503 in the envelope, naming
 * the watchers — until the chains and their watchers run; then 200. Polled from the moment the
 * gateway starts, against the real start-up (embedded chains, Agenda, PostgreSQL). Then the gas
 * tanks that start-up funded: a new user can sweep on every network right away.
 */
import { PublicKey } from '@solana/web3.js';
import { NETWORKS, type Network } from '../../src/common/environment';
import { freePort } from '../../src/db/embedded-postgres';
import { fundSandboxGasTanks, SANDBOX_TANK_FUNDING } from '../../src/devchain';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { eventually } from '../support/order-watch';

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
  expect(await ready.json()).toMatchObject({
    status_code: 200,
    message: 'Ready',
    data: { status: 'ready', database: true, migrations: true, watchers: true },
    status: 'ready',
  });
  // ...and "ready" means the four chains answer and are watched.
  expect(Object.keys(gw!.sandboxChains!.rpcUrls).sort()).toEqual(['BINANCE', 'ETHEREUM', 'SOLANA', 'TRON']);
  const nets = (await (await fetch(`${base}/api/v2/testnet/networks`)).json()) as { data: { networks: { name: string; tokens: unknown[] }[] } };
  expect(nets.data.networks.map((n) => n.name).sort()).toEqual(['BINANCE', 'ETHEREUM', 'SOLANA', 'TRON']);
  expect(nets.data.networks.every((n) => n.tokens.length >= 2)).toBe(true);
  console.info(`readyz: ${notReady.length} not-ready answers before ready`);
});

it('start-up funded the gas tank of each of the four networks above its low threshold, the sweep jobs see them ok, and funding again adds nothing', async () => {
  const g = gw!;
  const chains = g.sandboxChains!;
  const tank = (n: Network) => g.app.gasTanks.address('sandbox', n)!;
  // Read from the chains themselves, not from what the gateway stored.
  const onChain = async (n: Network): Promise<bigint> => {
    if (n === 'TRON') return chains.tron.trxBalance(tank(n));
    if (n === 'SOLANA') return BigInt(await chains.solana.connection.getBalance(new PublicKey(tank(n)), 'confirmed'));
    return BigInt(await chains.evm[n].rpc.call<string>('eth_getBalance', [tank(n), 'latest']));
  };
  const balances = Object.fromEntries(await Promise.all(NETWORKS.map(async (n) => [n, await onChain(n)] as const))) as Record<Network, bigint>;
  for (const n of NETWORKS)
    expect({ network: n, aboveThreshold: balances[n] > g.app.config[`GAS_TANK_LOW_${n}`] }).toEqual({ network: n, aboveThreshold: true });
  expect(balances.TRON).toBe(SANDBOX_TANK_FUNDING.TRON);
  expect(balances.SOLANA).toBe(SANDBOX_TANK_FUNDING.SOLANA);

  // Each network's sweep job runs with its tank and finds it ok (shown in /readyz details; ready all along).
  type Tank = { network: string; address: string; balance: string; state: string };
  const tanks = async () => ((await (await fetch(`${g.url}/readyz`)).json()) as { data: { gas_tanks?: Tank[] } }).data.gas_tanks ?? [];
  await eventually(async () => (await tanks()).length === 4, 'the four sweep jobs checked their tanks', 60_000);
  const shown = await tanks();
  expect(shown.map((t) => [t.network, t.address, t.state])).toEqual([...NETWORKS].sort().map((n) => [n, tank(n), 'ok']));

  // Funding again (what a start does on chains that already hold the tanks' coins) adds nothing.
  await fundSandboxGasTanks(chains, { TRON: tank('TRON'), SOLANA: tank('SOLANA') });
  for (const n of NETWORKS) expect({ network: n, balance: await onChain(n) }).toEqual({ network: n, balance: balances[n] });
}, 90_000);
