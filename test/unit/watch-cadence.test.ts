import { loadConfig } from '../../src/config';
import { pollCadence, pushUrls } from '../../src/chains/networks';
import { pauser } from '../../src/jobs/watch-chain.job';

const base = { MASTER_KEY: 'ab'.repeat(32), JWT_SECRET: 'j'.repeat(40), DATABASE_URL: 'postgres://x@127.0.0.1/x' };

describe('watcher cadence', () => {
  it('production polls at each chain’s block time, the sandbox at WATCH_POLL_MS; WATCH_POLL_MS_<NETWORK> overrides both; push slows an EVM poll, never speeds it, and leaves SOLANA’s', () => {
    const c = loadConfig({ ...base, WATCH_POLL_MS: '200', WATCH_POLL_MS_TRON: '1500' });
    expect(pollCadence(c, 'production', 'ETHEREUM')).toEqual({ pollMs: 12_000, pushPollMs: 12_000 });
    expect(pollCadence(c, 'production', 'BINANCE')).toEqual({ pollMs: 750, pushPollMs: 5000 });
    // SOLANA: push brings a poll forward, never slows the cadence (the deposits are read by polls)
    expect(pollCadence(c, 'production', 'SOLANA')).toEqual({ pollMs: 400, pushPollMs: 400 });
    expect(pollCadence(c, 'sandbox', 'SOLANA')).toEqual({ pollMs: 200, pushPollMs: 200 });
    expect(pollCadence(c, 'production', 'TRON').pollMs).toBe(1500);
    expect(pollCadence(c, 'sandbox', 'ETHEREUM')).toEqual({ pollMs: 200, pushPollMs: 5000 });
    expect(pollCadence(c, 'sandbox', 'TRON').pollMs).toBe(1500);
    // while push is open a poll still comes at least twice per WATCHER_STALL_S (readiness calls a silent watcher stalled)
    const tight = loadConfig({ ...base, WATCH_POLL_MS: '200', WATCHER_STALL_S: '3' });
    expect(pollCadence(tight, 'sandbox', 'ETHEREUM')).toEqual({ pollMs: 200, pushPollMs: 1500 });
    expect(pollCadence(tight, 'production', 'ETHEREUM')).toEqual({ pollMs: 12_000, pushPollMs: 12_000 });
  });

  it('push URLs: configured ones, else the local dev chain’s own (EVM ws on its HTTP port, SOLANA on port + 1); none with WATCH_PUSH off or on TRON', () => {
    const c = loadConfig({ ...base, DEV_CHAINS: 'true', PRODUCTION_ETHEREUM_WS_URLS: 'wss://eth.example/key' });
    expect(pushUrls(c, 'production', 'ETHEREUM', ['https://eth.example/key'])).toEqual(['wss://eth.example/key']);
    expect(pushUrls(c, 'production', 'BINANCE', ['https://bsc.example'])).toBeUndefined();
    expect(pushUrls(c, 'sandbox', 'BINANCE', ['http://127.0.0.1:8546'])).toEqual(['ws://127.0.0.1:8546']);
    expect(pushUrls(c, 'sandbox', 'TRON', ['http://127.0.0.1:9090'])).toBeUndefined();
    expect(pushUrls(c, 'sandbox', 'SOLANA', ['http://127.0.0.1:8899'])).toEqual(['ws://127.0.0.1:8900/']);
    expect(pushUrls(c, 'production', 'SOLANA', ['https://sol.example'])).toBeUndefined();
    const sol = loadConfig({ ...base, DEV_CHAINS: 'true', PRODUCTION_SOLANA_WS_URLS: 'wss://sol.example/?api-key=k' });
    expect(pushUrls(sol, 'production', 'SOLANA', ['https://sol.example/?api-key=k'])).toEqual(['wss://sol.example/?api-key=k']);
    expect(pushUrls(loadConfig({ ...base, DEV_CHAINS: 'true', WATCH_PUSH: 'false' }), 'sandbox', 'SOLANA', ['http://127.0.0.1:8899'])).toBeUndefined();
    const off = loadConfig({ ...base, DEV_CHAINS: 'true', WATCH_PUSH: 'false', PRODUCTION_ETHEREUM_WS_URLS: 'wss://eth.example/key' });
    expect(pushUrls(off, 'production', 'ETHEREUM', ['https://eth.example/key'])).toBeUndefined();
    expect(() => loadConfig({ ...base, PRODUCTION_ETHEREUM_WS_URLS: 'https://not-a-socket.example' })).toThrow(/WS_URLS/);
  });

  it('a wake during the pause ends it at once; a wake between pauses ends the next one; abort ends it', async () => {
    const ac = new AbortController();
    const p = pauser(ac.signal);
    let done = false;
    const one = p.sleep(60_000).then(() => (done = true));
    await Promise.resolve();
    expect(done).toBe(false);
    p.wake();
    await one;
    p.wake(); // between pauses: remembered
    await p.sleep(60_000);
    const two = p.sleep(60_000);
    ac.abort();
    await two;
  });
});
