import type { FastifyReply } from 'fastify';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { pageRoute, sendHtmlPage, type PageRoute } from '../http/page-routes.js';

/**
 * The merchant dashboard at `/dashboard`: a single-page app (src/dashboard/app, bundled by
 * scripts/dashboard-build.js) that speaks only the public GraphQL API, over HTTP and graphql-ws on
 * this origin, plus the orders CSV export the API offers dashboards.
 *
 * The same discipline as the hosted checkout: every byte from this origin (no CDN), no inline
 * script or style, no framing, no referrer. The HTML is never cached; the script and stylesheet are
 * addressed by their content hash, so a deploy never pairs an old page with a new script.
 */
export const DASHBOARD_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

interface Asset {
  type: string;
  body: Buffer;
  hash: string;
}

/**
 * The built bundle: next to the running code (`dist/dashboard-app` for `dist/src/…`, `.build/dashboard-app`
 * for `npm start`), else, from the source tree (jest), the production then the development build.
 */
export function dashboardAssetDir(from = __dirname): string | null {
  const candidates: string[] = [];
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (['dist', '.build'].includes(path.basename(dir))) candidates.push(path.join(dir, 'dashboard-app'));
    candidates.push(path.join(dir, 'dist', 'dashboard-app'), path.join(dir, '.build', 'dashboard-app'));
    if (path.dirname(dir) === dir) break;
  }
  return candidates.find((d) => existsSync(path.join(d, 'dashboard.js'))) ?? null;
}

function loadAssets(dir: string): Record<string, Asset> {
  const types: Record<string, string> = {
    'dashboard.js': 'text/javascript; charset=utf-8',
    'dashboard.css': 'text/css; charset=utf-8',
    'dashboard.js.map': 'application/json; charset=utf-8',
  };
  const assets: Record<string, Asset> = {};
  for (const [file, type] of Object.entries(types)) {
    const p = path.join(dir, file);
    if (!existsSync(p)) continue;
    const body = readFileSync(p);
    assets[file] = { type, body, hash: createHash('sha256').update(body).digest('hex').slice(0, 16) };
  }
  return assets;
}

export function renderDashboardShell(assets: Record<string, Asset>): string {
  const v = (f: string) => `/dashboard/assets/${f}?v=${assets[f]?.hash ?? ''}`;
  return `<!doctype html>
<html lang="id"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="referrer" content="no-referrer"><meta name="robots" content="noindex"><title>Dasbor merchant</title>
<link rel="stylesheet" href="${v('dashboard.css')}"></head>
<body><div id="app"><p class="muted">…</p></div>
<noscript>The merchant dashboard needs JavaScript. Dasbor merchant memerlukan JavaScript.</noscript>
<script src="${v('dashboard.js')}"></script>
</body></html>`;
}

const sendPage = (reply: FastifyReply, status: number, html: string) => sendHtmlPage(reply, status, html, DASHBOARD_CSP);

/**
 * `/dashboard` (and `/dashboard/`, the sections live in the URL fragment; `/dashboard/invite`, the
 * invite links) and its assets. Without a
 * built bundle the page says how to build it (503) instead of failing the gateway's start.
 */
export function dashboardPageRoutes(dir: string | null = dashboardAssetDir()): PageRoute[] {
  const assets = dir ? loadAssets(dir) : {};
  const page = renderDashboardShell(assets);

  const serve = async (_req: unknown, reply: FastifyReply) =>
    assets['dashboard.js']
      ? sendPage(reply, 200, page)
      : sendPage(
          reply,
          503,
          '<!doctype html><html lang="en"><meta charset="utf-8"><title>Dashboard not built</title><p>The dashboard is not built: run <code>npm run build</code> (or <code>npm start</code>).</p></html>',
        );
  return [
    pageRoute('/dashboard', serve),
    pageRoute('/dashboard/', serve),
    // The invite link (TEAM_INVITE_URL's default): the same page, which shows the invite screen.
    pageRoute('/dashboard/invite', serve),
    pageRoute<{ Params: { file: string }; Querystring: { v?: string } }>('/dashboard/assets/:file', async (req, reply) => {
      const a = Object.hasOwn(assets, req.params.file) ? assets[req.params.file] : undefined;
      if (!a) return reply.code(404).type('text/plain').send('Not found');
      const pinned = req.query.v === a.hash;
      return reply
        .type(a.type)
        .header('cache-control', pinned ? 'public, max-age=31536000, immutable' : 'no-cache')
        .header('etag', `"${a.hash}"`)
        .header('x-content-type-options', 'nosniff')
        .send(a.body);
    }),
  ];
}
