/**
 * Gas tanks in `/readyz` details, the operators' `gasTanks` query and the logs, on real anvil chains
 * with the worker's sweep jobs refreshing the tanks: each tank's address, balance, threshold and state
 * (ok / low / unfunded). A low or empty tank makes sweeps wait, so the gateway stays ready (200); the
 * turn to low is logged once at warn, the refill at info. No key or mnemonic anywhere in the output.
 */
import { Writable } from 'node:stream';
import pino from 'pino';
import { DEV_GAS_TANK_EVM_ADDRESS, DEV_GAS_TANK_EVM_KEY, startDevChains, type DevChains } from '../../src/devchain';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { eventually, WATCH_ENV, type EvmNet } from '../support/evm-harness';
import { http } from '../support/http';
import { addMember, createMerchant } from '../support/fixtures';

const OPERATOR_TOKEN = 'operator-token-for-gas-tank-tests-0123456789';
const THRESHOLD = 10n ** 17n;

let chains: DevChains;
let gw: TestGateway;
const logs: { level: number; msg: string; network?: string; [k: string]: unknown }[] = [];
const logText: string[] = [];

beforeAll(async () => {
  chains = await startDevChains();
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) {
        logText.push(line);
        logs.push(JSON.parse(line));
      }
      done();
    },
  });
  gw = await startTestGateway(
    {
      ...WATCH_ENV,
      SWEEP_POLL_MS: '200',
      WATCH_RUN_MS: '4000',
      OPERATOR_TOKEN,
      GAS_TANK_LOW_ETHEREUM: THRESHOLD.toString(),
      GAS_TANK_LOW_BINANCE: THRESHOLD.toString(),
    },
    { devChains: chains, log: pino({ level: 'info' }, sink) },
  );
}, 120_000);
afterAll(async () => {
  await gw?.close();
  await chains?.stop();
});

interface TankDetail {
  environment: string;
  network: string;
  address: string;
  balance: string | null;
  threshold: string;
  needed: string;
  state: 'ok' | 'low' | 'unfunded';
  checked_at: number | null;
}

async function readyz() {
  const r = await http(gw.url, '/readyz');
  return { status: r.status, body: r.body, text: r.text, tanks: (r.body.data?.gas_tanks ?? []) as TankDetail[] };
}
const tankOf = async (network: EvmNet) => (await readyz()).tanks.find((t) => t.network === network);
const setTank = (network: EvmNet, wei: bigint) => chains[network].rpc.call('anvil_setBalance', [DEV_GAS_TANK_EVM_ADDRESS, `0x${wei.toString(16)}`]);
const chainBalance = async (network: EvmNet) => BigInt(await chains[network].rpc.call<string>('eth_getBalance', [DEV_GAS_TANK_EVM_ADDRESS, 'latest']));
/** The merchant-facing `networkHealth` of a dashboard user. */
async function merchantHealth(user: { email: string; password: string }, environment: 'SANDBOX' | 'PRODUCTION') {
  const login = await http(gw.url, '/graphql', {
    body: { query: 'mutation($e: String!, $p: String!) { login(email: $e, password: $p) { token } }', variables: { e: user.email, p: user.password } },
  });
  const query = `{ networkHealth(environment: ${environment}) { network watcher lastBlock blocksBehind secondsSincePoll providersUp providersDown gasTank sweepsWaitingForGas } }`;
  const r = await http(gw.url, '/graphql', { body: { query }, headers: { authorization: `Bearer ${login.body.data.login.token}` } });
  return { ...r.body, text: r.text };
}
const lowWarnings = (network: EvmNet) => logs.filter((l) => l.level === 40 && l.msg.startsWith('gas tank low') && l.network === network);

it('lists every tank per environment and network with its address, balance, threshold and state; the gateway stays ready while a tank is low or empty', async () => {
  await eventually(async () => (await readyz()).tanks.length === 2, 'both EVM tanks checked by their sweep jobs', 30_000);
  const first = await readyz();
  expect(first.status).toBe(200);
  expect(first.body).toMatchObject({
    status_code: 200,
    message: 'Ready',
    status: 'ready',
    data: { status: 'ready', database: true, migrations: true, watchers: true },
  });
  // Details live in `data` only: the top level keeps the checks probes read.
  expect(first.body.gas_tanks).toBeUndefined();
  for (const network of ['BINANCE', 'ETHEREUM'] as const) {
    const t = first.tanks.find((x) => x.network === network)!;
    expect(t).toEqual({
      environment: 'sandbox',
      network,
      address: DEV_GAS_TANK_EVM_ADDRESS,
      balance: (await chainBalance(network)).toString(),
      threshold: THRESHOLD.toString(),
      needed: '0',
      state: 'ok',
      checked_at: expect.any(Number),
    });
  }
  expect(lowWarnings('ETHEREUM')).toHaveLength(0);

  // ETHEREUM's tank below its threshold: low. BINANCE's emptied: unfunded. Ready all along.
  await setTank('ETHEREUM', THRESHOLD - 1n);
  await setTank('BINANCE', 0n);
  await eventually(
    async () => (await tankOf('ETHEREUM'))?.state === 'low' && (await tankOf('BINANCE'))?.state === 'unfunded',
    'tanks marked low and unfunded',
    30_000,
  );
  const low = await readyz();
  expect(low.status).toBe(200);
  expect(low.body).toMatchObject({ status_code: 200, message: 'Ready', status: 'ready' });
  expect(low.tanks.find((t) => t.network === 'ETHEREUM')).toMatchObject({
    balance: (THRESHOLD - 1n).toString(),
    threshold: THRESHOLD.toString(),
    state: 'low',
  });
  expect(low.tanks.find((t) => t.network === 'BINANCE')).toMatchObject({ balance: '0', state: 'unfunded' });
  // Operators read the same state over GraphQL.
  const gql = await http(gw.url, '/graphql', { body: { query: '{ gasTanks { network state } }' }, headers: { 'x-operator-token': OPERATOR_TOKEN } });
  expect(Object.fromEntries(gql.body.data.gasTanks.map((t: { network: string; state: string }) => [t.network, t.state]))).toEqual({
    ETHEREUM: 'LOW',
    BINANCE: 'UNFUNDED',
  });
  // Merchants read it as it affects them (networkHealth): the tank's state and the watcher's, no address or host.
  const m = await createMerchant(gw.app);
  const health = await merchantHealth(m, 'SANDBOX');
  expect(health.errors).toBeUndefined();
  const byNetwork = Object.fromEntries(health.data.networkHealth.map((h: { network: string }) => [h.network, h]));
  expect(byNetwork.ETHEREUM).toMatchObject({ watcher: 'FOLLOWING', gasTank: 'LOW', sweepsWaitingForGas: 0, providersDown: 0 });
  expect(byNetwork.ETHEREUM.providersUp).toBeGreaterThan(0);
  expect(byNetwork.BINANCE).toMatchObject({ gasTank: 'UNFUNDED', sweepsWaitingForGas: 0 });
  expect(health.text.toLowerCase()).not.toContain(DEV_GAS_TANK_EVM_ADDRESS.toLowerCase());
  expect(health.text).not.toMatch(/127\.0\.0\.1|localhost|http:/);
  // A role that cannot see settlement (developer) gets the states, not the count of its sweeps.
  const dev = await addMember(gw.app, m.merchantId, 'developer');
  const devHealth = await merchantHealth(dev, 'SANDBOX');
  expect(devHealth.data.networkHealth.find((h: { network: string }) => h.network === 'ETHEREUM')).toMatchObject({ gasTank: 'LOW', sweepsWaitingForGas: null });
  // An API key answers for its own environment only; anonymous callers get nothing.
  const wrongEnv = await http(gw.url, '/graphql', {
    body: { query: '{ networkHealth(environment: SANDBOX) { network } }' },
    headers: { 'api-key': m.productionKey },
  });
  expect(wrongEnv.body.errors[0].extensions.code).toBe('WRONG_ENVIRONMENT');
  const byKey = await http(gw.url, '/graphql', {
    body: { query: '{ networkHealth(environment: SANDBOX) { network gasTank } }' },
    headers: { 'api-key': m.sandboxKey },
  });
  expect(byKey.body.data.networkHealth).toEqual(expect.arrayContaining([{ network: 'ETHEREUM', gasTank: 'LOW' }]));
  const anonymous = await http(gw.url, '/graphql', { body: { query: '{ networkHealth(environment: SANDBOX) { network } }' } });
  expect(anonymous.body.data).toBeNull();
  expect(['UNAUTHENTICATED', 'FORBIDDEN']).toContain(anonymous.body.errors[0].extensions.code);
  // The turn to low is logged once at warn, with what to fund, however many ticks see it low.
  await new Promise((r) => setTimeout(r, 1000));
  expect(lowWarnings('ETHEREUM')).toHaveLength(1);
  expect(lowWarnings('ETHEREUM')[0]).toMatchObject({
    environment: 'sandbox',
    tank: DEV_GAS_TANK_EVM_ADDRESS,
    balance: (THRESHOLD - 1n).toString(),
    threshold: THRESHOLD.toString(),
  });
  expect(lowWarnings('BINANCE')).toHaveLength(1);

  // Refilled: ok again, logged at info.
  await setTank('ETHEREUM', 10n ** 21n);
  await setTank('BINANCE', 10n ** 21n);
  await eventually(async () => (await readyz()).tanks.every((t) => t.state === 'ok'), 'tanks ok after the refill', 30_000);
  expect(
    logs
      .filter((l) => l.level === 30 && l.msg === 'gas tank refilled')
      .map((l) => l.network)
      .sort(),
  ).toEqual(['BINANCE', 'ETHEREUM']);

  // Public addresses and balances only: neither the tank key nor the sandbox tank mnemonic in the answer or the logs.
  const secrets = [DEV_GAS_TANK_EVM_KEY.slice(2), gw.app.config.GAS_TANK_MNEMONIC_SANDBOX!];
  const everything = [(await readyz()).text, low.text, first.text, ...logText].join('\n').toLowerCase();
  for (const s of secrets) expect(everything).not.toContain(s.toLowerCase());
}, 120_000);
