/**
 * `/metrics` on the real gateway: open in test/development without METRICS_TOKEN, bearer-protected
 * with it; content after real activity (orders created and paid, open deposits, HTTP latency by
 * route pattern, job runs, RPC errors per provider host from a watcher pointed at a dead node).
 */
import { watchedNetworks } from '../../src/chains/networks';
import { createChainWatcher } from '../../src/jobs/chain-watcher.factory';
import { NILE_USDT, paidOrder } from '../support/analytics';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { http } from '../support/http';
import { checkout, eventually } from '../support/order-watch';

const TOKEN = 'metrics-token-0123456789abcdef';

describe('open (test environment, no METRICS_TOKEN)', () => {
  let gw: TestGateway;
  beforeAll(async () => (gw = await startTestGateway({ EXPIRY_INTERVAL_S: '1' })));
  afterAll(() => gw?.close());
  const scrape = async () => {
    const r = await fetch(`${gw.url}/metrics`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^text\/plain/);
    return r.text();
  };

  it('counts orders created and paid, open deposits, HTTP latency by route, job runs', async () => {
    const m = await createMerchant(gw.app);
    await paidOrder(gw, m.sandboxKey, { network: 'TRON', tokenAddress: NILE_USDT, walletType: 'TRUSTWALLET' });
    await checkout(gw.url, m.sandboxKey, { amountIdr: '20000', tokenAddress: NILE_USDT, network: 'TRON', walletType: 'TRUSTWALLET' });
    await http(gw.url, '/api/v2/testnet/merchant/me', { headers: { 'api-key': m.sandboxKey } });
    await eventually(async () => /cpg_job_runs_total\{job="expire-orders",outcome="success"\} [1-9]/.test(await scrape()), 'an expire-orders run');
    const text = await scrape();
    expect(text).toMatch(/cpg_orders_created_total\{environment="sandbox",source="api"\} 2\b/);
    expect(text).toMatch(/cpg_orders_paid_total\{environment="sandbox"\} 1\b/);
    expect(text).toMatch(/cpg_order_transitions_total\{environment="sandbox",from="Created",to="Success"\} 1\b/);
    expect(text).toMatch(/cpg_open_deposits\{environment="sandbox",network="TRON"\} 1\b/);
    expect(text).toMatch(/cpg_http_request_duration_seconds_count\{method="GET",route="\/api\/v2\/testnet\/merchant\/me",status="200"\} 1\b/);
    expect(text).toMatch(/cpg_webhook_backlog\{state="pending"\} \d+/);
    expect(text).toMatch(/cpg_webhook_oldest_pending_age_seconds \d/);
    // Route patterns, never raw URLs (bounded label values): a 404 path does not become a label.
    await http(gw.url, '/no/such/path-12345');
    expect(await scrape()).not.toContain('path-12345');
  });

  it('counts failed RPC attempts per provider host (never the URL path, which may carry a key)', async () => {
    const [target] = watchedNetworks(
      gw.app.config,
      { 'sandbox:ETHEREUM': ['http://127.0.0.1:9/v3/secret-api-key'] },
      {
        onRpcFailure: (f) => gw.app.metrics.rpcErrors.inc({ environment: f.environment, network: f.network, provider: f.provider, reason: f.reason }),
      },
    );
    const watcher = createChainWatcher(gw.app, target!);
    await expect(watcher.tick(gw.app.orm.em.fork())).rejects.toThrow();
    const text = await scrape();
    expect(text).toMatch(/cpg_rpc_errors_total\{environment="sandbox",network="ETHEREUM",provider="127.0.0.1:9",reason="network"\} [1-9]/);
    expect(text).not.toContain('secret-api-key');
    // The watcher is tracked; before its first head it reports no block gauges, only its lag clock.
    expect(text).toMatch(/cpg_watcher_lag_seconds\{environment="sandbox",network="ETHEREUM"\} \d/);
  });
});

describe('with METRICS_TOKEN', () => {
  let gw: TestGateway;
  beforeAll(async () => (gw = await startTestGateway({ METRICS_TOKEN: TOKEN })));
  afterAll(() => gw?.close());

  it('refuses a missing or wrong token in the envelope, serves the right one', async () => {
    const none = await http(gw.url, '/metrics');
    expect(none.status).toBe(401);
    expect(none.body).toEqual({ status_code: 401, message: expect.any(String), data: { code: 'UNAUTHENTICATED' } });
    const wrong = await http(gw.url, '/metrics', { headers: { authorization: `Bearer ${TOKEN}x` } });
    expect(wrong.status).toBe(401);
    expect(wrong.body.data.code).toBe('INVALID_TOKEN');
    const ok = await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(ok.status).toBe(200);
    expect(await ok.text()).toContain('cpg_http_request_duration_seconds');
  });

  it('a worker alone serves its metrics on METRICS_PORT, with the same token rule', async () => {
    const worker = await startTestGateway({ ROLE: 'worker', METRICS_TOKEN: TOKEN, METRICS_PORT: '0' }, { db: gw.db });
    try {
      expect(worker.metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect((await fetch(`${worker.metricsUrl}/metrics`)).status).toBe(401);
      const ok = await fetch(`${worker.metricsUrl}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(ok.status).toBe(200);
      expect(await ok.text()).toContain('cpg_job_runs_total');
      expect((await fetch(`${worker.metricsUrl}/other`)).status).toBe(404);
    } finally {
      await worker.stop();
    }
  });
});
