import { ChainDisagreementError, ProviderGate, WrongChainError, type ChainIdentity } from '../../src/chains/chain-identity';
import { watcherState } from '../../src/modules/payments/watcher-health';
import { pairPushUrls, pushChecks } from '../../src/chains/push-gate';
import { solanaWsUrl } from '../../src/chains/solana/solana.heads';

const A: ChainIdentity = { chainId: '1', genesis: '0xaaa' };
const B: ChainIdentity = { chainId: '1', genesis: '0xbbb' };

function gate(serving: Record<string, ChainIdentity | Error>, opts: { genesis?: string; chainId?: string; now?: () => number } = {}) {
  const probes: string[] = [];
  const refused: string[] = [];
  const g = new ProviderGate({
    network: 'ETHEREUM',
    urls: Object.keys(serving),
    chainId: opts.chainId ?? null,
    genesis: opts.genesis ?? null,
    recheckMs: 1000,
    refusedRetryMs: 5000,
    now: opts.now,
    onRefused: (e) => refused.push(e.provider),
    probe: async (url) => {
      probes.push(url);
      const s = serving[url]!;
      if (s instanceof Error) throw s;
      return s;
    },
  });
  return { g, probes, refused };
}

describe('ProviderGate', () => {
  it('a vouched provider is not probed at recheckMs, but still every 10 intervals; a vouch never verifies an unverified or refused provider', async () => {
    let now = 0;
    const { g, probes } = gate({ 'http://one:1': A }, { genesis: A.genesis, now: () => now });
    g.vouch(); // not verified yet: nothing to renew
    await g.admit('http://one:1');
    expect(probes).toHaveLength(1);
    for (let t = 0; t < 9; t++) {
      now += 900;
      g.vouch(); // served a block on top of the cursor
      await g.admit('http://one:1');
    }
    expect(probes).toHaveLength(1); // 8.1 s without a probe at recheckMs 1 s
    now += 2000; // past 10 intervals since the real probe: vouching no longer renews
    g.vouch();
    await g.admit('http://one:1');
    expect(probes).toHaveLength(2);
    const refused = gate({ 'http://two:2': B }, { genesis: A.genesis, now: () => now });
    await expect(refused.g.admit('http://two:2')).rejects.toThrow(WrongChainError);
    refused.g.vouch();
    await expect(refused.g.admit('http://two:2')).rejects.toThrow(WrongChainError);
  });

  it('probes a provider on first use, on a switch and after recheckMs; not on every call', async () => {
    let now = 0;
    const { g, probes } = gate({ 'http://one:1/key': A, 'http://two:2': A }, { genesis: A.genesis, now: () => now });
    await g.admit('http://one:1/key');
    await g.admit('http://one:1/key');
    expect(probes).toEqual(['http://one:1/key']);
    await g.admit('http://two:2', true); // a switch
    await g.admit('http://one:1/key', true); // and back
    expect(probes).toEqual(['http://one:1/key', 'http://two:2', 'http://one:1/key']);
    now += 1000;
    await g.admit('http://one:1/key');
    expect(probes).toHaveLength(4);
  });

  it('a head round (every provider at once) is not a switch: verified providers are not probed again, and current() keeps reporting the provider calls use', async () => {
    let now = 0;
    const { g, probes } = gate({ 'http://one:1': A, 'http://two:2': A }, { genesis: A.genesis, now: () => now });
    await g.admit('http://one:1');
    await g.admit('http://two:2', false, true); // first seen in a round: probed
    expect(probes).toEqual(['http://one:1', 'http://two:2']);
    for (let i = 0; i < 3; i++) {
      await g.admit('http://one:1', false, true);
      await g.admit('http://two:2', false, true);
      await g.admit('http://one:1');
    }
    expect(probes).toHaveLength(2);
    now += 1000; // recheckMs: due again, rounds included
    await g.admit('http://two:2', false, true);
    expect(probes).toEqual(['http://one:1', 'http://two:2', 'http://two:2']);
    await g.current();
    expect(probes).toHaveLength(4); // current() probed one (the provider calls use), also due
    expect(probes[3]).toBe('http://one:1');
  });

  it('refuses a provider on another chain (chain id or genesis), reports it once by host, and retries it later', async () => {
    let now = 0;
    const serving: Record<string, ChainIdentity> = { 'https://user:secret@bad.example/v3/KEY': B, 'http://good:1': A };
    const { g, refused, probes } = gate(serving, { genesis: A.genesis, now: () => now });
    await expect(g.admit('https://user:secret@bad.example/v3/KEY')).rejects.toBeInstanceOf(WrongChainError);
    await expect(g.admit('https://user:secret@bad.example/v3/KEY')).rejects.toThrow(
      'ETHEREUM provider bad.example serves another chain (chain id 1, genesis 0xbbb; expected genesis 0xaaa)',
    );
    expect(refused).toEqual(['bad.example']);
    expect(probes).toHaveLength(1); // refused from the cache
    expect(JSON.stringify(g.providers())).not.toMatch(/secret|KEY/);
    await g.admit('http://good:1');
    // fixed later: probed again after refusedRetryMs, then admitted
    serving['https://user:secret@bad.example/v3/KEY'] = A;
    now += 5000;
    await g.admit('https://user:secret@bad.example/v3/KEY');
    expect(g.providers().map((p) => p.state)).toEqual(['ok', 'ok']);

    const ids = gate({ 'http://x:1': { chainId: '56', genesis: '0xaaa' } }, { chainId: '1' });
    await expect(ids.g.admit('http://x:1')).rejects.toThrow('expected chain id 1');
  });

  it('follows any genesis until pinned (sandbox first run); then refuses others; allRefused names the chain every provider moved to', async () => {
    const serving: Record<string, ChainIdentity> = { 'http://one:1': A, 'http://two:2': A };
    const { g } = gate(serving);
    expect(await g.current()).toEqual(A);
    g.pin(A);
    serving['http://one:1'] = B;
    serving['http://two:2'] = B;
    await expect(g.current(true)).rejects.toBeInstanceOf(WrongChainError);
    expect(g.allRefused()).toBeNull(); // the second one is not probed yet
    await expect(g.admit('http://two:2', true)).rejects.toBeInstanceOf(WrongChainError);
    expect(g.allRefused()).toEqual(B);
    g.pin(B);
    expect(await g.current()).toEqual(B);
  });

  it('a provider that cannot be probed is unknown, not refused, and its error is the attempt failure', async () => {
    const { g, refused } = gate({ 'http://down:1': new Error('connect ECONNREFUSED') }, { genesis: A.genesis });
    await expect(g.admit('http://down:1')).rejects.toThrow('ECONNREFUSED');
    expect(g.providers()).toEqual([expect.objectContaining({ provider: 'down:1', state: 'unknown', reason: expect.stringContaining('ECONNREFUSED') })]);
    expect(refused).toEqual([]);
  });

  it('establish: the expected chain wins whichever provider is first; the other is refused once, by host', async () => {
    const { g, refused } = gate({ 'http://wrong:1': B, 'http://right:2': A }, { genesis: A.genesis });
    expect(await g.establish()).toEqual(A);
    expect(g.providers().map((p) => p.state)).toEqual(['refused', 'ok']);
    g.pin(A); // the watcher pins what it stored: the same expectation, no second alarm
    await g.establish();
    expect(refused).toEqual(['wrong:1']);
  });

  it('a head round that finds the provider used last refused makes a verified one current', async () => {
    const { g } = gate({ 'http://wrong:1': B, 'http://right:2': A }, { genesis: A.genesis });
    await Promise.allSettled([g.admit('http://wrong:1', false, true), g.admit('http://right:2', false, true)]);
    expect(await g.current()).toEqual(A);
  });

  it('establish with nothing expected: the majority chain is pinned and the minority refused; a tie trusts nobody', async () => {
    const three = gate({ 'http://wrong:1': B, 'http://right:2': A, 'http://right:3': A });
    expect(await three.g.establish()).toEqual(A);
    expect(three.g.providers().map((p) => p.state)).toEqual(['refused', 'ok', 'ok']);
    expect(three.refused).toEqual(['wrong:1']);

    const two = gate({ 'http://right:2': A, 'http://wrong:1': B });
    await expect(two.g.establish()).rejects.toThrow(ChainDisagreementError);
    await expect(two.g.establish()).rejects.toThrow(/right:2: chain id 1, genesis 0xaaa; wrong:1: chain id 1, genesis 0xbbb/);
    // one of them unreachable: the one that answers is the majority of those that did
    const down = gate({ 'http://right:2': A, 'http://wrong:1': new Error('ECONNREFUSED') });
    expect(await down.g.establish()).toEqual(A);
  });

  it('allRefused: the chain most providers moved to, none when they moved to different ones', async () => {
    const C: ChainIdentity = { chainId: '1', genesis: '0xccc' };
    const split = gate({ 'http://one:1': B, 'http://two:2': C }, { genesis: A.genesis });
    await Promise.allSettled([split.g.admit('http://one:1'), split.g.admit('http://two:2')]);
    expect(split.g.allRefused()).toBeNull();
  });
});

describe('push sockets', () => {
  const evmWs = (u: string) => u.replace(/^http/, 'ws');

  it('pairs WebSocket URLs with RPC URLs: by index when the lists have the same length, else by the derived host (none when ambiguous or absent)', () => {
    expect(pairPushUrls(['http://a:1', 'http://b:1'], ['wss://x/k', 'wss://y/k'], evmWs)).toEqual(['http://a:1', 'http://b:1']);
    expect(pairPushUrls(['https://sol.example/?api-key=k'], ['wss://other.example/', 'wss://sol.example/?api-key=k'], solanaWsUrl)).toEqual([
      null,
      'https://sol.example/?api-key=k',
    ]);
    // a validator: RPC on 8899, pubsub on 8900
    expect(pairPushUrls(['http://v:8899', 'http://w:8899'], ['ws://v:8900'], solanaWsUrl)).toEqual(['http://v:8899']);
    expect(pairPushUrls(['http://v:8899/a', 'http://v:8899/b'], ['ws://v:8900'], solanaWsUrl)).toEqual([null]);
  });

  it('judgeSocket: waits while nothing is expected, refuses another chain id at once and another genesis once pinned (alarmed once per identity)', () => {
    const { g, refused } = gate({ 'http://one:1': A }, { chainId: '1' });
    expect(g.expected()).toBeNull();
    expect(g.judgeSocket('ws://s:1', A).state).toBe('unknown');
    expect(g.judgeSocket('ws://s:1', { chainId: '2', genesis: '0xccc' }).state).toBe('refused');
    g.pin(A);
    expect(g.expected()).toEqual(A);
    expect(g.judgeSocket('ws://s:1', A).state).toBe('ok');
    expect(g.judgeSocket('ws://s:1', B).state).toBe('refused');
    expect(g.judgeSocket('ws://s:1', B).state).toBe('refused');
    expect(refused).toEqual(['s:1', 's:1']); // chain id 2, then genesis B: each once
    expect(g.providers().map((p) => p.provider)).toEqual(['one:1']); // sockets are not providers
  });

  it('a provider refused by its RPC URL and by its socket (one host) is alarmed once per identity', async () => {
    const { g, refused } = gate({ 'http://good:1': A, 'http://bad:1': B }, { chainId: '1', genesis: A.genesis });
    await g.establish();
    expect(g.judgeSocket('ws://bad:1', B).state).toBe('refused');
    expect(refused).toEqual(['bad:1']);
  });

  it('pushChecks (EVM): no socket before the chain is known nor while its RPC provider is refused', async () => {
    const { g } = gate({ 'http://good:1': A, 'http://bad:1': B }, { chainId: '1', genesis: A.genesis });
    const checks = pushChecks(g, ['http://good:1', 'http://bad:1'], ['ws://good:1', 'ws://bad:1'], evmWs, 'socket');
    await g.establish();
    expect(await checks.admit!('ws://good:1')).toEqual({ use: true });
    expect(await checks.admit!('ws://bad:1')).toMatchObject({ use: false, retryMs: 5000 });
    expect(checks.still!('ws://bad:1')).toBe(false);
    expect(checks.verify!('ws://good:1', B)).toMatchObject({ use: false, retryMs: 5000 });
    const unpinned = gate({ 'http://good:1': A }, { chainId: '1' }).g;
    expect(await pushChecks(unpinned, ['http://good:1'], ['ws://good:1'], evmWs, 'socket').admit!('ws://good:1')).toMatchObject({ use: false });
  });

  it('pushChecks (SOLANA): a socket is used only while its RPC provider is verified; one that belongs to no RPC URL never', async () => {
    const { g, probes } = gate({ 'http://good:1': A, 'http://bad:1': B }, { genesis: A.genesis });
    const checks = pushChecks(g, ['http://good:1', 'http://bad:1'], ['ws://good:2/', 'ws://bad:2/', 'ws://stray:2/'], solanaWsUrl, 'paired');
    expect(await checks.admit!('ws://good:2/')).toEqual({ use: true });
    expect(probes).toEqual(['http://good:1']); // verified now, its verification being due
    expect(await checks.admit!('ws://bad:2/')).toMatchObject({ use: false });
    expect(await checks.admit!('ws://stray:2/')).toMatchObject({ use: false });
  });
});

describe('watcherState', () => {
  const limits = { stallS: 15, lagS: 60 };
  const t = (s: number) => new Date(s * 1000);
  const base = { startedAt: t(0), lastErrorAt: null, caughtUpAt: t(100), lastOkAt: t(100) };
  it('fresh, lagging, stalled, provider_down', () => {
    expect(watcherState(base, 105_000, limits)).toBe('fresh');
    // polling fine but not caught up for > 60 s
    expect(watcherState({ ...base, lastOkAt: t(200), caughtUpAt: t(100) }, 205_000, limits)).toBe('lagging');
    // no poll completed for > 15 s, none failed (a node that holds the call open)
    expect(watcherState(base, 120_000, limits)).toBe('stalled');
    // the last poll failed
    expect(watcherState({ ...base, lastErrorAt: t(110) }, 120_000, limits)).toBe('provider_down');
    // a transient failure inside the stall window changes nothing
    expect(watcherState({ ...base, lastErrorAt: t(104) }, 105_000, limits)).toBe('fresh');
    // never polled since start
    expect(watcherState({ startedAt: t(0), lastOkAt: null, lastErrorAt: null, caughtUpAt: null }, 16_000, limits)).toBe('stalled');
  });
});
