import type { GasTankState } from '../../src/modules/sweeps/gas-tank.service.js';
import { networkHealth } from '../../src/modules/payments/network-health.js';
import type { WatcherHealthRow, WatcherProvider } from '../../src/modules/payments/watcher-health.js';

const NOW = Date.parse('2026-11-29T06:00:00Z');
const LIMITS = { stallS: 15, lagS: 60 };
const ago = (s: number) => new Date(NOW - s * 1000);
const provider = (p: Partial<WatcherProvider>): WatcherProvider => ({
  provider: 'rpc.example:8545',
  state: 'ok',
  identity: null,
  reason: null,
  checkedAt: null,
  ...p,
});

function watcher(over: Partial<WatcherHealthRow>): WatcherHealthRow {
  return {
    environment: 'sandbox',
    network: 'ETHEREUM',
    headBlock: '1005',
    scannedBlock: '1000',
    lastOkAt: ago(2),
    lastErrorAt: null,
    lastError: 'connect ECONNREFUSED 10.0.0.7:8545',
    caughtUpAt: ago(3),
    startedAt: ago(600),
    chainId: '31337',
    genesisHash: '0xabc',
    providers: [provider({}), provider({ provider: 'b', health: 'demoted' }), provider({ provider: 'c', state: 'refused' })],
    updatedAt: ago(2),
    ...over,
  };
}
const tank = (over: Partial<GasTankState>): GasTankState => ({
  environment: 'sandbox',
  network: 'ETHEREUM',
  address: '0xtank',
  balance: 10n ** 18n,
  lowThreshold: 10n ** 16n,
  low: false,
  needed: 0n,
  checkedAt: ago(30),
  ...over,
});

it('maps the watcher state as merchants read it: following, lagging, down (stalled or every provider failing)', () => {
  const states = networkHealth(
    'sandbox',
    [
      watcher({ network: 'ETHEREUM' }),
      watcher({ network: 'BINANCE', caughtUpAt: ago(120) }),
      watcher({ network: 'TRON', lastOkAt: ago(30), lastErrorAt: ago(1) }),
      watcher({ network: 'SOLANA', lastOkAt: ago(30) }),
    ],
    [],
    {},
    NOW,
    LIMITS,
  );
  expect(states.map((s) => [s.network, s.watcher])).toEqual([
    ['BINANCE', 'lagging'],
    ['ETHEREUM', 'following'],
    ['SOLANA', 'down'],
    ['TRON', 'down'],
  ]);
});

it('counts providers up (on the chain, not demoted) and down, and the blocks behind, without any host or error text', () => {
  const [eth] = networkHealth('sandbox', [watcher({})], [], {}, NOW, LIMITS);
  expect(eth).toEqual({
    network: 'ETHEREUM',
    watcher: 'following',
    lastBlock: '1000',
    blocksBehind: 5,
    lastPolledAt: ago(2),
    secondsSincePoll: 2,
    providersUp: 1,
    providersDown: 2,
    gasTank: null,
    sweepsWaitingForGas: 0,
  });
  expect(JSON.stringify(eth)).not.toMatch(/rpc\.example|10\.0\.0\.7|0xtank|ECONNREFUSED/);
});

it('only the environment asked for; a network with a tank and no watcher is unknown', () => {
  const rows = networkHealth('production', [watcher({})], [tank({ environment: 'production', network: 'TRON' })], {}, NOW, LIMITS);
  expect(rows).toEqual([
    expect.objectContaining({
      network: 'TRON',
      watcher: 'unknown',
      lastBlock: null,
      blocksBehind: null,
      secondsSincePoll: null,
      providersUp: 0,
      providersDown: 0,
      gasTank: 'ok',
    }),
  ]);
});

it('sweeps wait for gas only while the tank is not ok; a tank never checked is not reported', () => {
  const planned = { ETHEREUM: 3, TRON: 2, SOLANA: 4 };
  const rows = networkHealth(
    'sandbox',
    [],
    [
      tank({}),
      tank({ network: 'TRON', low: true }),
      tank({ network: 'SOLANA', balance: 0n, low: true }),
      tank({ network: 'BINANCE', balance: null, checkedAt: null }),
    ],
    planned,
    NOW,
    LIMITS,
  );
  expect(rows.map((r) => [r.network, r.gasTank, r.sweepsWaitingForGas])).toEqual([
    ['BINANCE', null, 0],
    ['ETHEREUM', 'ok', 0],
    ['SOLANA', 'unfunded', 4],
    ['TRON', 'low', 2],
  ]);
});
