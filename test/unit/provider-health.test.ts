import { headRound, ProviderHealth } from '../../src/chains/provider-health';

const URLS = ['https://a.example/v3/key-a', 'https://b.example/rpc', 'https://c.example'];

function scorer(opts: { maxLagBlocks?: number; urls?: string[] } = {}) {
  let now = 1_000_000;
  const failures: { provider: string; reason: string; consecutiveFailures: number }[] = [];
  const h = new ProviderHealth({
    urls: opts.urls ?? URLS,
    maxLagBlocks: opts.maxLagBlocks ?? 3,
    baseBackoffMs: 1000,
    maxBackoffMs: 8000,
    onFailure: (f) => failures.push(f),
    now: () => now,
  });
  return { h, failures, advance: (ms: number) => (now += ms) };
}

describe('ProviderHealth', () => {
  it('tries providers in configured order while all are healthy', () => {
    const { h } = scorer();
    expect(h.order()).toEqual([0, 1, 2]);
  });

  it('a failure demotes the provider behind every healthy one, for a backoff that doubles per consecutive failure', () => {
    const { h, advance } = scorer();
    h.failed(0, 'timeout');
    expect(h.order()).toEqual([1, 2, 0]);
    expect(h.snapshot()[0]).toMatchObject({ state: 'demoted', consecutiveFailures: 1, lastReason: 'timeout', retryAt: 1_001_000 });
    advance(1000);
    expect(h.snapshot()[0]!.state).toBe('healthy');
    h.failed(0, 'timeout');
    expect(h.snapshot()[0]!.retryAt).toBe(1_001_000 + 2000);
    h.failed(0, 'timeout');
    h.failed(0, 'timeout');
    h.failed(0, 'timeout');
    // capped at maxBackoffMs
    expect(h.snapshot()[0]!.retryAt).toBe(1_001_000 + 8000);
  });

  it('a success ends the streak: the next failure backs off from the start again', () => {
    const { h, advance } = scorer();
    h.failed(1, 'http_5xx');
    h.failed(1, 'http_5xx');
    advance(2000);
    h.succeeded(1, 10);
    expect(h.snapshot()[1]).toMatchObject({ state: 'healthy', consecutiveFailures: 0, retryAt: null });
    h.failed(1, 'http_5xx');
    expect(h.snapshot()[1]!.retryAt).toBe(1_002_000 + 1000);
  });

  it('never leaves no provider: when every one is demoted, the one due soonest goes first', () => {
    const { h, advance } = scorer();
    h.failed(0, 'network');
    h.failed(0, 'network'); // due in 2 s
    advance(100);
    h.failed(2, 'network'); // due in 1 s from now
    advance(100);
    h.failed(1, 'network');
    expect(h.order()).toEqual([2, 1, 0]);
    // and a head round asks the first of them
    expect(h.heads()).toEqual([2]);
  });

  it('a provider with many recent errors ranks after one with fewer, even once its backoff is over', () => {
    const { h, advance } = scorer();
    for (let i = 0; i < 3; i++) h.failed(0, 'rate_limited');
    advance(10_000);
    h.succeeded(0, 10);
    // error rate still ≥ 50 %: behind the clean ones
    expect(h.order()).toEqual([1, 2, 0]);
    // successes bring it back to its configured place (a recovered primary takes the traffic back)
    for (let i = 0; i < 8; i++) h.succeeded(0, 10);
    expect(h.order()).toEqual([0, 1, 2]);
  });

  it('a provider several times slower than the fastest (and over 250 ms) ranks after it; small differences keep the configured order', () => {
    const { h } = scorer();
    h.succeeded(0, 2000);
    h.succeeded(1, 40);
    h.succeeded(2, 200);
    expect(h.order()).toEqual([1, 2, 0]);
    const { h: h2 } = scorer();
    h2.succeeded(0, 120);
    h2.succeeded(1, 20);
    expect(h2.order()).toEqual([0, 1, 2]);
  });

  it('a head round demotes a provider further behind the best head than allowed, and reports the head of the first-ranked provider left', () => {
    const { h, failures } = scorer({ maxLagBlocks: 3 });
    const chosen = h.settleHeads(
      new Map([
        [0, 90n],
        [1, 100n],
        [2, 98n],
      ]),
    );
    expect(failures).toEqual([{ provider: 'a.example', reason: 'behind', consecutiveFailures: 1 }]);
    expect(h.order()).toEqual([1, 2, 0]);
    expect(chosen).toBe(1);
    // within the allowed lag, the configured order decides (2 is not behind 100 by more than 3)
    expect(h.snapshot()[2]).toMatchObject({ state: 'healthy', head: 98n });
  });

  it('a head round asks every provider not in backoff, including one whose backoff is over (it is retried there)', async () => {
    const { h, advance } = scorer();
    h.failed(0, 'behind');
    const asked: number[][] = [];
    const round = () => headRound(h, async (i) => (asked.push([i]), 100n));
    await round();
    expect(asked.flat()).toEqual([1, 2]);
    advance(1000);
    asked.length = 0;
    const { answers } = await round();
    expect(asked.flat().sort()).toEqual([0, 1, 2]);
    expect(h.settleHeads(answers)).toBe(1);
    // it answered at the best head: healthy again (its error rate keeps it behind the clean ones for now)
    expect(h.snapshot()[0]!.state).toBe('healthy');
  });

  it('an answer that was in flight when the provider failed does not end its demotion', () => {
    const { h, advance } = scorer();
    advance(500);
    h.failed(0, 'timeout');
    advance(100);
    h.succeeded(0, 300); // started 200 ms before the failure
    expect(h.snapshot()[0]).toMatchObject({ state: 'demoted', consecutiveFailures: 1 });
    h.succeeded(0, 50); // started after it
    expect(h.snapshot()[0]).toMatchObject({ state: 'healthy', consecutiveFailures: 0 });
  });

  it('a provider demoted as behind stays demoted through the other calls it answers, until a head round finds it caught up', () => {
    const { h, advance } = scorer();
    h.settleHeads(
      new Map([
        [0, 90n],
        [1, 100n],
      ]),
    );
    advance(10);
    h.succeeded(0, 5); // a lagging node answers what it has
    expect(h.snapshot()[0]).toMatchObject({ state: 'demoted', lastReason: 'behind' });
    advance(1000);
    h.settleHeads(
      new Map([
        [0, 99n],
        [1, 100n],
      ]),
    );
    expect(h.snapshot()[0]).toMatchObject({ state: 'healthy', consecutiveFailures: 0 });
  });

  it('nobody answering a round yields no head', () => {
    const { h } = scorer();
    expect(h.settleHeads(new Map())).toBeNull();
  });

  it('reports and shows hosts only, never paths (API keys live there)', () => {
    const { h, failures } = scorer();
    h.failed(0, 'wrong_chain');
    expect(failures[0]!.provider).toBe('a.example');
    expect(JSON.stringify(h.snapshot(), (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v))).not.toContain('key-a');
  });
});
