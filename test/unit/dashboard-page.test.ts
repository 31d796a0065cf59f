import Fastify from 'fastify';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { buildDashboard, firstLoadSize } from '../../scripts/dashboard-build.js';
import { DASHBOARD_CSP, dashboardPageRoutes } from '../../src/dashboard/dashboard.page';
import { registerPages } from '../../src/http/page-routes';

/** The dashboard's page and assets as the gateway serves them, from a bundle built here by the real build. */
describe('the /dashboard page', () => {
  const out = mkdtempSync(path.join(tmpdir(), 'cpg-dashboard-'));
  beforeAll(() => {
    expect(buildDashboard({ out, production: true })).toBe(true);
  });

  it('builds only when a source changed, and the first load stays under 200 KB of gzipped JavaScript', () => {
    expect(buildDashboard({ out, production: true })).toBe(false);
    // A bundle whose stamp no longer matches (built from other sources) is built again.
    writeFileSync(path.join(out, '.stamp'), 'other sources');
    expect(buildDashboard({ out, production: true })).toBe(true);
    expect(firstLoadSize(out).js.gzip).toBeLessThan(200 * 1024);
  });

  it('is served with the checkout discipline: strict CSP, no framing, no referrer, never cached', async () => {
    const f = Fastify();
    registerPages(f, dashboardPageRoutes(out));
    const res = await f.inject({ url: '/dashboard' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-security-policy']).toBe(DASHBOARD_CSP);
    expect(DASHBOARD_CSP).toContain("script-src 'self'");
    expect(DASHBOARD_CSP).not.toContain('unsafe-inline');
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['referrer-policy']).toBe('no-referrer');
    expect(res.headers['cache-control']).toBe('no-store');
    // No inline script: every <script> has a same-origin src.
    const scripts = [...res.body.matchAll(/<script([^>]*)>/g)].map((m) => m[1]!);
    expect(scripts.length).toBe(1);
    expect(scripts.every((a) => /src="\/dashboard\/assets\//.test(a))).toBe(true);
    expect((await f.inject({ url: '/dashboard/' })).statusCode).toBe(200);
    // The invite link's page: the same page with the same headers.
    const invite = await f.inject({ url: '/dashboard/invite' });
    expect({
      status: invite.statusCode,
      csp: invite.headers['content-security-policy'],
      referrer: invite.headers['referrer-policy'],
      body: invite.body,
    }).toEqual({ status: 200, csp: DASHBOARD_CSP, referrer: 'no-referrer', body: res.body });
  });

  it('addresses the script by its content: the pinned URL is immutable, anything else revalidates, unknown files 404', async () => {
    const f = Fastify();
    registerPages(f, dashboardPageRoutes(out));
    const html = (await f.inject({ url: '/dashboard' })).body;
    const src = /<script src="([^"]+)"/.exec(html)![1]!;
    const pinned = await f.inject({ url: src });
    expect(pinned.statusCode).toBe(200);
    expect(pinned.headers['content-type']).toMatch(/^text\/javascript/);
    expect(pinned.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(pinned.rawPayload.equals(readFileSync(path.join(out, 'dashboard.js')))).toBe(true);
    expect((await f.inject({ url: '/dashboard/assets/dashboard.js?v=stale' })).headers['cache-control']).toBe('no-cache');
    expect((await f.inject({ url: '/dashboard/assets/..%2Fpackage.json' })).statusCode).toBe(404);
    expect((await f.inject({ url: '/dashboard/assets/constructor' })).statusCode).toBe(404);
  });

  it('without a built bundle the page says how to build it (503) instead of throwing at registration', async () => {
    const f = Fastify();
    registerPages(f, dashboardPageRoutes(null));
    const res = await f.inject({ url: '/dashboard' });
    expect(res.statusCode).toBe(503);
    expect(res.body).toContain('npm run build');
  });
});
