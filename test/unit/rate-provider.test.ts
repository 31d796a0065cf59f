/**
 * RateService + the real Indodax/CoinGecko provider code against a loopback HTTP server that
 * imitates each source (good answers, 500s, garbage, slowness, absurd values).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DomainError } from '../../src/common/errors.js';
import { CoinGeckoRateProvider, jsonNumberToDecimal } from '../../src/modules/quotes/providers/coingecko.rate-provider.js';
import { IndodaxRateProvider } from '../../src/modules/quotes/providers/indodax.rate-provider.js';
import {
  RateProviderRegistry,
  RateService,
  type RateProvider,
  type RateProviderFailure,
  type RateServiceOptions,
} from '../../src/modules/quotes/rate-provider.js';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

let server: Server;
let baseUrl: string;
let handler: Handler;
let hits: string[];

function json(body: unknown, status = 200): Handler {
  return (_req, res) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(typeof body === 'string' ? body : JSON.stringify(body));
  };
}

function delayed(ms: number, inner: Handler): Handler {
  return (req, res) => {
    const t = setTimeout(() => inner(req, res), ms);
    // The client aborts on timeout; stop the timer so nothing lingers after the test.
    res.on('close', () => clearTimeout(t));
  };
}

const indodaxTicker = (last: string) => ({
  ticker: {
    high: '16450',
    low: '16210',
    vol_usdt: '1234567.89',
    vol_idr: '20123456789',
    last,
    buy: '16299',
    sell: '16301',
    server_time: 1732170000,
    name: 'Tether',
  },
});

/** Routes by path: Indodax pairs and CoinGecko simple price share the one server. */
function routes(map: Record<string, Handler>): Handler {
  return (req, res) => {
    const path = (req.url ?? '').split('?')[0] as string;
    const h = map[path];
    if (h) return h(req, res);
    res.writeHead(404).end();
  };
}

beforeAll(async () => {
  server = createServer((req, res) => {
    hits.push(req.url ?? '');
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

let clock: number;
let failures: RateProviderFailure[];

beforeEach(() => {
  hits = [];
  failures = [];
  clock = 1_732_170_000_000;
  handler = (_req, res) => res.writeHead(404).end();
});

const indodax = () => new IndodaxRateProvider({ baseUrl });
const coingecko = () => new CoinGeckoRateProvider({ baseUrl: `${baseUrl}/` });

function service(providers: RateProvider[], extra: Partial<RateServiceOptions> = {}): RateService {
  return new RateService({
    providers,
    fallbackRates: { USDT: '16250', USDC: '16250' },
    cacheTtlMs: 60_000,
    requestTimeoutMs: 5_000, // a loaded CI machine may take more than 300 ms to answer loopback; the timeout tests set their own
    fallbackTtlMs: 0,
    now: () => clock,
    onProviderFailure: (f) => failures.push(f),
    ...extra,
  });
}

describe('IndodaxRateProvider via RateService', () => {
  it('uses ticker.last for USDT and USDC from the right pair', async () => {
    handler = routes({
      '/api/ticker/usdtidr': json(indodaxTicker('16300')),
      '/api/ticker/usdcidr': json(indodaxTicker('16290.5')),
    });
    const svc = service([indodax()]);
    await expect(svc.getRate('USDT')).resolves.toEqual({ rate: '16300', source: 'indodax', fetchedAt: new Date(clock) });
    await expect(svc.getRate('USDC')).resolves.toMatchObject({ rate: '16290.5', source: 'indodax' });
    expect(hits).toEqual(['/api/ticker/usdtidr', '/api/ticker/usdcidr']);
    expect(failures).toEqual([]);
  });

  it('normalises the rate to ≤ 8 decimals without trailing zeros', async () => {
    handler = json(indodaxTicker('16300.123456789'));
    await expect(service([indodax()]).getRate('USDT')).resolves.toMatchObject({ rate: '16300.12345678' });
    handler = json(indodaxTicker('16300.10'));
    await expect(service([indodax()]).getRate('USDT')).resolves.toMatchObject({ rate: '16300.1' });
  });
});

describe('CoinGeckoRateProvider via RateService', () => {
  it('reads tether / usd-coin from one simple-price call', async () => {
    handler = routes({ '/api/v3/simple/price': json('{"tether":{"idr":16300.12},"usd-coin":{"idr":16290}}') });
    const svc = service([coingecko()]);
    await expect(svc.getRate('USDT')).resolves.toMatchObject({ rate: '16300.12', source: 'coingecko' });
    await expect(svc.getRate('USDC')).resolves.toMatchObject({ rate: '16290', source: 'coingecko' });
    expect(hits).toEqual(['/api/v3/simple/price?ids=tether,usd-coin&vs_currencies=idr', '/api/v3/simple/price?ids=tether,usd-coin&vs_currencies=idr']);
  });

  it('accepts JSON exponent notation when the value prints as a plain decimal', async () => {
    handler = json('{"tether":{"idr":1.63e4},"usd-coin":{"idr":16290}}');
    await expect(service([coingecko()]).getRate('USDT')).resolves.toMatchObject({ rate: '16300', source: 'coingecko' });
  });

  it('falls back when the coin is missing or the price is not a number', async () => {
    handler = json({ 'usd-coin': { idr: 16290 } });
    await expect(service([coingecko()]).getRate('USDT')).resolves.toMatchObject({ source: 'fallback' });
    handler = json({ tether: { idr: '16300' } });
    await expect(service([coingecko()]).getRate('USDT')).resolves.toMatchObject({ source: 'fallback' });
  });

  it('jsonNumberToDecimal keeps the digits and refuses exponent forms', () => {
    expect(jsonNumberToDecimal(16300.12)).toBe('16300.12');
    expect(jsonNumberToDecimal(0.1 + 0.2)).toBe('0.30000000000000004'); // we never do float maths; this shows why
    expect(() => jsonNumberToDecimal(1e21)).toThrow();
    expect(() => jsonNumberToDecimal(1e-7)).toThrow();
    expect(() => jsonNumberToDecimal(-1)).toThrow();
    expect(() => jsonNumberToDecimal(Number.NaN)).toThrow();
  });
});

describe('fallback', () => {
  const fallback = { rate: '16250', source: 'fallback' };

  it('on HTTP 500', async () => {
    handler = json({ error: 'boom' }, 500);
    await expect(service([indodax()]).getRate('USDT')).resolves.toMatchObject(fallback);
    expect(failures).toHaveLength(1);
    expect(failures[0]).toMatchObject({ providerId: 'indodax', symbol: 'USDT' });
    expect(String(failures[0]?.error)).toContain('HTTP 500');
  });

  it('on a body that is not JSON', async () => {
    handler = (_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('<html>oops');
    await expect(service([indodax()]).getRate('USDT')).resolves.toMatchObject(fallback);
    await expect(service([coingecko()]).getRate('USDT')).resolves.toMatchObject(fallback);
  });

  it('on JSON of the wrong shape (Indodax error object, empty object, array)', async () => {
    for (const body of [{ error: 'invalid_pair', error_description: 'Invalid Pair' }, {}, [], null]) {
      handler = json(body);
      await expect(service([indodax()]).getRate('USDT')).resolves.toMatchObject(fallback);
    }
  });

  it.each(['abc', '', '0', '-16300', '1e5', '16,300', ' 16300'])('on a non-numeric or non-positive last %p', async (last) => {
    handler = json(indodaxTicker(last));
    await expect(service([indodax()]).getRate('USDT')).resolves.toMatchObject(fallback);
  });

  it.each(['16', '999.99999999', '100000.00000001', '1630000'])('on an absurd rate %p', async (last) => {
    handler = json(indodaxTicker(last));
    await expect(service([indodax()]).getRate('USDT')).resolves.toMatchObject(fallback);
    expect(String(failures[0]?.error)).toContain('sanity bounds');
  });

  it('bounds are inclusive and configurable', async () => {
    handler = json(indodaxTicker('1000'));
    // maxChangePercent 100: only the absolute bounds are under test here (the change bound has its own tests).
    await expect(service([indodax()], { maxChangePercent: 100 }).getRate('USDT')).resolves.toMatchObject({ rate: '1000', source: 'indodax' });
    handler = json(indodaxTicker('16'));
    await expect(service([indodax()], { minRate: '10', maxRate: '20', maxChangePercent: 100 }).getRate('USDT')).resolves.toMatchObject({
      rate: '16',
      source: 'indodax',
    });
  });

  it('on a response slower than the timeout, without waiting for it', async () => {
    handler = delayed(3_000, json(indodaxTicker('16300')));
    const started = Date.now();
    await expect(service([indodax()], { requestTimeoutMs: 200 }).getRate('USDT')).resolves.toMatchObject(fallback);
    expect(Date.now() - started).toBeLessThan(1_500);
    expect(String(failures[0]?.error)).toContain('timed out');
  });

  it('on a provider that ignores the abort signal', async () => {
    const stuck: RateProvider = { id: 'stuck', getRate: () => new Promise<string>(() => undefined) };
    await expect(service([stuck], { requestTimeoutMs: 50 }).getRate('USDC')).resolves.toMatchObject(fallback);
  });

  it('on a provider that throws synchronously or returns a non-string', async () => {
    const throws: RateProvider = {
      id: 'throws',
      getRate: () => {
        throw new Error('sync');
      },
    };
    const numeric: RateProvider = { id: 'numeric', getRate: async () => 16300 as unknown as string };
    await expect(service([throws, numeric]).getRate('USDT')).resolves.toMatchObject(fallback);
    expect(failures.map((f) => f.providerId)).toEqual(['throws', 'numeric']);
  });

  it('when the server is not listening at all', async () => {
    const dead = new IndodaxRateProvider({ baseUrl: 'http://127.0.0.1:9' });
    await expect(service([dead]).getRate('USDT')).resolves.toMatchObject(fallback);
  });

  it('with no providers configured', async () => {
    await expect(service([]).getRate('USDC')).resolves.toMatchObject(fallback);
  });

  it('survives a throwing failure hook', async () => {
    handler = json({}, 500);
    const svc = service([indodax()], {
      onProviderFailure: () => {
        throw new Error('logger down');
      },
    });
    await expect(svc.getRate('USDT')).resolves.toMatchObject(fallback);
  });
});

describe('failover order', () => {
  it('asks the next provider when the first fails', async () => {
    handler = routes({
      '/api/ticker/usdtidr': json({}, 503),
      '/api/v3/simple/price': json({ tether: { idr: 16301.5 }, 'usd-coin': { idr: 16290 } }),
    });
    await expect(service([indodax(), coingecko()]).getRate('USDT')).resolves.toMatchObject({
      rate: '16301.5',
      source: 'coingecko',
    });
    expect(hits).toEqual(['/api/ticker/usdtidr', '/api/v3/simple/price?ids=tether,usd-coin&vs_currencies=idr']);
  });

  it('stops at the first good answer', async () => {
    handler = routes({
      '/api/ticker/usdtidr': json(indodaxTicker('16300')),
      '/api/v3/simple/price': json({ tether: { idr: 1 } }),
    });
    await expect(service([indodax(), coingecko()]).getRate('USDT')).resolves.toMatchObject({ source: 'indodax' });
    expect(hits).toHaveLength(1);
  });
});

describe('cache', () => {
  it('reuses a live answer within the TTL and refreshes after it', async () => {
    let last = '16300';
    handler = (req, res) => json(indodaxTicker(last))(req, res);
    const svc = service([indodax()], { cacheTtlMs: 30_000 });

    const first = await svc.getRate('USDT');
    expect(first).toEqual({ rate: '16300', source: 'indodax', fetchedAt: new Date(clock) });
    last = '16400';
    clock += 29_999;
    await expect(svc.getRate('USDT')).resolves.toEqual(first);
    await expect(svc.getRate('USDT')).resolves.toEqual(first);
    expect(hits).toHaveLength(1);

    clock += 1; // TTL reached
    await expect(svc.getRate('USDT')).resolves.toEqual({ rate: '16400', source: 'indodax', fetchedAt: new Date(clock) });
    expect(hits).toHaveLength(2);
  });

  it('caches per symbol', async () => {
    handler = json(indodaxTicker('16300'));
    const svc = service([indodax()]);
    await svc.getRate('USDT');
    await svc.getRate('USDC');
    await svc.getRate('USDT');
    await svc.getRate('USDC');
    expect(hits).toEqual(['/api/ticker/usdtidr', '/api/ticker/usdcidr']);
  });

  it('reuses a fallback answer only for fallbackTtlMs, then asks the source again', async () => {
    let healthy = false;
    handler = (req, res) => (healthy ? json(indodaxTicker('16300')) : json({}, 500))(req, res);
    const svc = service([indodax()], { fallbackTtlMs: 5_000 });

    await expect(svc.getRate('USDT')).resolves.toMatchObject({ source: 'fallback' });
    await expect(svc.getRate('USDT')).resolves.toMatchObject({ source: 'fallback' });
    expect(hits).toHaveLength(1);

    healthy = true;
    clock += 5_000;
    await expect(svc.getRate('USDT')).resolves.toMatchObject({ rate: '16300', source: 'indodax' });
    expect(hits).toHaveLength(2);
  });

  it('with fallbackTtlMs 0 every call retries the source', async () => {
    handler = json({}, 500);
    const svc = service([indodax()], { fallbackTtlMs: 0 });
    await svc.getRate('USDT');
    await svc.getRate('USDT');
    expect(hits).toHaveLength(2);
  });

  it('clearCache forces a refresh', async () => {
    handler = json(indodaxTicker('16300'));
    const svc = service([indodax()]);
    await svc.getRate('USDT');
    svc.clearCache();
    await svc.getRate('USDT');
    expect(hits).toHaveLength(2);
  });
});

describe('no stampede', () => {
  it('20 concurrent callers share one request', async () => {
    handler = delayed(100, json(indodaxTicker('16300')));
    const svc = service([indodax()], { requestTimeoutMs: 2_000 });
    const results = await Promise.all(Array.from({ length: 20 }, () => svc.getRate('USDT')));
    expect(hits).toHaveLength(1);
    for (const r of results) expect(r).toBe(results[0]);
    expect(results[0]).toMatchObject({ rate: '16300', source: 'indodax' });
  });

  it('20 concurrent callers share one failing request too', async () => {
    handler = delayed(100, json({}, 502));
    const svc = service([indodax()], { requestTimeoutMs: 2_000, fallbackTtlMs: 0 });
    const results = await Promise.all(Array.from({ length: 20 }, () => svc.getRate('USDC')));
    expect(hits).toHaveLength(1);
    expect(new Set(results.map((r) => r.source))).toEqual(new Set(['fallback']));
    // Once settled, the next call starts a fresh request.
    await svc.getRate('USDC');
    expect(hits).toHaveLength(2);
  });
});

describe('RateService contract', () => {
  it('rejects an unsupported symbol with TOKEN_NOT_SUPPORTED', async () => {
    await expect(service([]).getRate('DAI' as 'USDT')).rejects.toMatchObject({ code: 'TOKEN_NOT_SUPPORTED' });
    await expect(service([]).getRate('DAI' as 'USDT')).rejects.toBeInstanceOf(DomainError);
  });

  it('validates its options at construction', () => {
    const ok = { providers: [], fallbackRates: { USDT: '16250', USDC: '16250' } };
    expect(() => new RateService(ok)).not.toThrow();
    expect(() => new RateService({ ...ok, fallbackRates: { USDT: '0', USDC: '16250' } })).toThrow(/fallbackRates.USDT/);
    expect(() => new RateService({ ...ok, fallbackRates: { USDT: '16250' } as never })).toThrow(/fallbackRates.USDC/);
    expect(() => new RateService({ ...ok, minRate: '20000', maxRate: '10000' })).toThrow(/minRate/);
    expect(() => new RateService({ ...ok, requestTimeoutMs: 0 })).toThrow(/requestTimeoutMs/);
    expect(() => new RateService({ ...ok, cacheTtlMs: -1 })).toThrow(/cacheTtlMs/);
  });

  it('uses the real clock by default', async () => {
    const svc = new RateService({ providers: [], fallbackRates: { USDT: '16250.5', USDC: '16251' } });
    const before = Date.now();
    const r = await svc.getRate('USDT');
    expect(r.rate).toBe('16250.5');
    expect(r.fetchedAt.getTime()).toBeGreaterThanOrEqual(before);
  });
});

describe('RateProviderRegistry', () => {
  it('resolves ids in the configured order', () => {
    const reg = new RateProviderRegistry([indodax(), coingecko()]);
    expect(reg.ids()).toEqual(['indodax', 'coingecko']);
    expect(reg.resolve(['coingecko', 'indodax']).map((p) => p.id)).toEqual(['coingecko', 'indodax']);
    expect(reg.get('indodax')).toBeInstanceOf(IndodaxRateProvider);
    expect(reg.get('nope')).toBeUndefined();
  });

  it('rejects unknown and duplicate ids', () => {
    const reg = new RateProviderRegistry([indodax()]);
    expect(() => reg.resolve(['indodax', 'binance'])).toThrow(/binance/);
    expect(() => reg.register(new IndodaxRateProvider())).toThrow(/already registered/);
    expect(() => reg.register(new IndodaxRateProvider({ id: 'indodax-mirror', baseUrl }))).not.toThrow();
  });
});

describe('rate sanity (one source answered 99,000 IDR/USDT)', () => {
  const unavailable = { code: 'RATE_UNAVAILABLE' };
  let indodaxLast: string;
  let coingeckoIdr: number | null;
  beforeEach(() => {
    indodaxLast = '16300';
    coingeckoIdr = 16310;
    handler = routes({
      '/api/ticker/usdtidr': (req, res) => json(indodaxTicker(indodaxLast))(req, res),
      '/api/v3/simple/price': (req, res) =>
        (coingeckoIdr === null ? json({}, 503) : json({ tether: { idr: coingeckoIdr }, 'usd-coin': { idr: 16290 } }))(req, res),
    });
  });

  it('a source 6× off is refused and the next source answers', async () => {
    indodaxLast = '99000';
    await expect(service([indodax(), coingecko()]).getRate('USDT')).resolves.toMatchObject({ rate: '16310', source: 'coingecko' });
    expect(String(failures[0]?.error)).toMatch(/rate 99000 is more than 10% from the reference 16250/);
  });

  it('a jump of more than 10 % from the last accepted rate is refused; within 10 % it follows', async () => {
    const svc = service([indodax()], { cacheTtlMs: 0 });
    await expect(svc.getRate('USDT')).resolves.toMatchObject({ rate: '16300', source: 'indodax' });
    indodaxLast = '17900'; // +9.8 % from 16,300
    await expect(svc.getRate('USDT')).resolves.toMatchObject({ rate: '17900', source: 'indodax' });
    indodaxLast = '99000';
    // The fallback 16,250 is 9.2 % below the last accepted 17,900: still within bounds, so it is used.
    await expect(svc.getRate('USDT')).resolves.toMatchObject({ rate: '16250', source: 'fallback' });
    expect(String(failures.at(-1)?.error)).toMatch(/more than 10% from the reference 17900/);
  });

  it('refuses to quote (RATE_UNAVAILABLE) when the only answer is off and the fallback is too far from the last good rate', async () => {
    const svc = service([indodax(), coingecko()], { cacheTtlMs: 0, fallbackRates: { USDT: '16250', USDC: '16250' } });
    indodaxLast = '17500';
    coingeckoIdr = 17600;
    await expect(svc.getRate('USDT')).resolves.toMatchObject({ rate: '17500', source: 'indodax' });
    indodaxLast = '18500'; // +5.7 %
    await expect(svc.getRate('USDT')).resolves.toMatchObject({ rate: '18500', source: 'indodax' });
    indodaxLast = '99000';
    coingeckoIdr = null;
    const err = await svc.getRate('USDT').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DomainError);
    expect(err).toMatchObject({ ...unavailable, httpStatus: 503 });
    expect((err as DomainError).message).toMatch(/No trustworthy USDT\/IDR rate/);
  });

  it('two sources that agree move the rate past the bound (the market moved); one alone does not', async () => {
    indodaxLast = '19000'; // +17 % from the fallback reference
    coingeckoIdr = null;
    const svc = service([indodax(), coingecko()], { cacheTtlMs: 0 });
    await expect(svc.getRate('USDT')).resolves.toMatchObject({ source: 'fallback' });
    coingeckoIdr = 19050;
    await expect(svc.getRate('USDT')).resolves.toMatchObject({ rate: '19000', source: 'indodax' });
    // 19,000 is now the reference: the configured fallback (16,250) is 14 % away and is refused.
    indodaxLast = '99000';
    coingeckoIdr = null;
    await expect(svc.getRate('USDT')).rejects.toMatchObject(unavailable);
  });

  it('two sources that disagree with each other and with the reference: neither is quoted', async () => {
    indodaxLast = '99000';
    coingeckoIdr = 30000;
    await expect(service([indodax(), coingecko()]).getRate('USDT')).resolves.toMatchObject({ rate: '16250', source: 'fallback' });
  });

  it('the bound is configurable', async () => {
    indodaxLast = '17000'; // +4.6 % from the fallback
    await expect(service([indodax()], { maxChangePercent: 4 }).getRate('USDT')).resolves.toMatchObject({ source: 'fallback' });
    await expect(service([indodax()], { maxChangePercent: 5 }).getRate('USDT')).resolves.toMatchObject({ rate: '17000', source: 'indodax' });
    expect(() => service([], { maxChangePercent: 0 })).toThrow();
  });
});
