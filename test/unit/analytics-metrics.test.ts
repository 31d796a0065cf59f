import type { App } from '../../src/app';
import { metricsAccessError } from '../../src/http/metrics.route';
import { GatewayMetrics } from '../../src/modules/metrics/gateway-metrics';

describe('metrics access', () => {
  const app = (token: string | undefined, isProduction: boolean) => ({ config: { METRICS_TOKEN: token, isProduction } }) as unknown as App;
  it('open in development without a token, refused in production without one', () => {
    expect(metricsAccessError(app(undefined, false), undefined)).toBeNull();
    expect(metricsAccessError(app(undefined, true), 'Bearer anything')?.code).toBe('FORBIDDEN');
  });
  it('with a token: only the exact bearer token, in every environment', () => {
    const t = 'x'.repeat(20);
    expect(metricsAccessError(app(t, false), undefined)?.code).toBe('UNAUTHENTICATED');
    expect(metricsAccessError(app(t, true), `Bearer ${t}y`)?.code).toBe('INVALID_TOKEN');
    expect(metricsAccessError(app(t, true), `Basic ${t}`)?.code).toBe('UNAUTHENTICATED');
    expect(metricsAccessError(app(t, true), `Bearer ${t}`)).toBeNull();
  });
});

describe('watcher lag gauges', () => {
  it('blocks behind the head and seconds since last caught up', async () => {
    const m = new GatewayMetrics();
    const now = Date.now();
    m.trackWatcher({
      lag: () => ({ environment: 'production', network: 'TRON', headBlock: 120n, scannedBlock: 100n, caughtUpAt: now - 30_000, startedAt: now - 60_000 }),
    });
    m.trackWatcher({
      lag: () => ({ environment: 'sandbox', network: 'ETHEREUM', headBlock: 50n, scannedBlock: 50n, caughtUpAt: now, startedAt: now - 60_000 }),
    });
    const text = await m.render();
    expect(text).toMatch(/cpg_watcher_lag_blocks\{environment="production",network="TRON"\} 20\b/);
    expect(text).toMatch(/cpg_watcher_head_block\{environment="production",network="TRON"\} 120\b/);
    const lagS = Number(/cpg_watcher_lag_seconds\{environment="production",network="TRON"\} ([\d.]+)/.exec(text)![1]);
    expect(lagS).toBeGreaterThanOrEqual(30);
    expect(lagS).toBeLessThan(40);
    expect(text).toMatch(/cpg_watcher_lag_blocks\{environment="sandbox",network="ETHEREUM"\} 0\b/);
  });
});
