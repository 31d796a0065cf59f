import type { FastifyInstance } from 'fastify';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { DomainError } from '../common/errors.js';

/**
 * The offline GraphQL explorer at `/explorer`: GraphiQL 3 with React 18, every byte served from the
 * installed packages (no CDN, works with no internet). Queries go to `/graphql`, subscriptions over
 * graphql-ws on the same path; the headers typed in GraphiQL's Headers tab (`{"api-key": "…"}` or
 * `{"authorization": "Bearer …"}`) are sent with queries and as the subscription's connection
 * params. On by default in development (EXPLORER_ENABLED), off in production unless enabled.
 */

const pkgDir = (pkg: string): string => {
  try {
    return dirname(require.resolve(`${pkg}/package.json`));
  } catch {
    return dirname(require.resolve(pkg)); // packages whose "exports" hide package.json (react): main is at the root
  }
};
const ASSETS: Record<string, { pkg: string; file: string; type: string }> = {
  'react.js': { pkg: 'react', file: 'umd/react.production.min.js', type: 'text/javascript; charset=utf-8' },
  'react-dom.js': { pkg: 'react-dom', file: 'umd/react-dom.production.min.js', type: 'text/javascript; charset=utf-8' },
  'graphiql.js': { pkg: 'graphiql', file: 'graphiql.min.js', type: 'text/javascript; charset=utf-8' },
  'graphiql.css': { pkg: 'graphiql', file: 'graphiql.min.css', type: 'text/css; charset=utf-8' },
};

// Our start-up script (a file, so the CSP allows no inline script).
const START = `(function () {
  var http = location.origin + '/graphql';
  var ws = (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/graphql';
  var fetchers = {};
  function fetcher(params, opts) {
    var headers = (opts && opts.headers) || {};
    var key = JSON.stringify(headers);
    if (!fetchers[key]) fetchers[key] = GraphiQL.createFetcher({ url: http, subscriptionUrl: ws, headers: headers, wsConnectionParams: headers });
    return fetchers[key](params, opts);
  }
  var root = ReactDOM.createRoot(document.getElementById('graphiql'));
  root.render(React.createElement(GraphiQL, {
    fetcher: fetcher,
    defaultEditorToolbarOpen: true,
    defaultHeaders: '{\\n  "api-key": ""\\n}',
    defaultQuery: '# Orders of the environment, newest first (docs/api.md)\\nquery {\\n  orders(first: 10) {\\n    totalCount\\n    edges { node { orderNo status amount createdAt paidNetwork } }\\n  }\\n}\\n'
  }));
})();
`;

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>GraphQL explorer · crypto payment gateway</title>
<link rel="stylesheet" href="/explorer/assets/graphiql.css">
<style>html, body, #graphiql { height: 100%; margin: 0; }</style>
</head>
<body>
<div id="graphiql">Loading the explorer…</div>
<script src="/explorer/assets/react.js"></script>
<script src="/explorer/assets/react-dom.js"></script>
<script src="/explorer/assets/graphiql.js"></script>
<script src="/explorer/assets/start.js"></script>
</body>
</html>
`;

// GraphiQL's editors set inline styles; scripts only from here; data only to this origin (HTTP and WebSocket).
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/**
 * A browser opening `/graphql` (GET, `Accept: text/html`, no `query`): Apollo's landing page is off (it
 * loads its explorer from outside hosts, so it fails offline), so the browser goes to `/explorer` when
 * it is served, or gets a 404 saying why there is no explorer. GET requests with a `query` still run.
 */
export function registerGraphqlBrowserGet(fastify: FastifyInstance, explorerEnabled: boolean): void {
  fastify.addHook('onRequest', async (req, reply) => {
    if (req.method !== 'GET' || req.url.split('?')[0] !== '/graphql') return;
    if (!String(req.headers.accept ?? '').includes('text/html') || new URLSearchParams(req.url.split('?')[1] ?? '').has('query')) return;
    if (explorerEnabled) return reply.redirect('/explorer', 302);
    throw new DomainError(
      'ROUTE_NOT_FOUND',
      'No GraphQL explorer on this server (EXPLORER_ENABLED is off, the production default): send GraphQL requests as POST /graphql or over graphql-ws',
    );
  });
}

export function registerExplorer(fastify: FastifyInstance): void {
  const cache = new Map<string, Buffer>();
  const read = (name: string): Buffer => {
    let body = cache.get(name);
    if (!body) {
      const a = ASSETS[name]!;
      body = readFileSync(join(pkgDir(a.pkg), a.file));
      cache.set(name, body);
    }
    return body;
  };
  fastify.get('/explorer', async (_req, reply) =>
    reply.header('content-security-policy', CSP).header('cache-control', 'no-store').type('text/html; charset=utf-8').send(PAGE),
  );
  fastify.get('/explorer/assets/start.js', async (_req, reply) => reply.header('cache-control', 'no-cache').type('text/javascript; charset=utf-8').send(START));
  fastify.get<{ Params: { name: string } }>('/explorer/assets/:name', async (req, reply) => {
    const a = Object.hasOwn(ASSETS, req.params.name) ? ASSETS[req.params.name] : undefined;
    if (!a) throw new DomainError('ROUTE_NOT_FOUND', 'No such explorer asset');
    return reply.header('cache-control', 'public, max-age=3600').type(a.type).send(read(req.params.name));
  });
}
