import type { FastifyInstance } from 'fastify';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { App } from '../app.js';
import { DomainError } from '../common/errors.js';
import { API_VERSION } from '../rest/openapi/openapi.emit.js';
import { buildOpenApiDocument, type RouteTable } from '../rest/openapi/openapi.document.js';

/**
 * `GET /openapi.json`: the OpenAPI 3.1 document of the routes this server registered (with this
 * deployment's limits), and `GET /reference`: an offline reference page (Swagger UI from the
 * installed swagger-ui-dist package, no CDN) reading it. Both public, on the IP's public budget.
 */

const uiDir = (): string => dirname(require.resolve('swagger-ui-dist/package.json'));
const ASSETS: Record<string, { file: string; type: string }> = {
  'swagger-ui.css': { file: 'swagger-ui.css', type: 'text/css; charset=utf-8' },
  'swagger-ui-bundle.js': { file: 'swagger-ui-bundle.js', type: 'text/javascript; charset=utf-8' },
};

// A file, not an inline script, so the CSP allows no inline script. validatorUrl null: no call to an outside validator.
const START = `window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#reference', deepLinking: true, validatorUrl: null, tryItOutEnabled: false, defaultModelsExpandDepth: 0 });
});
`;

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>REST API reference · crypto payment gateway</title>
<link rel="stylesheet" href="/reference/assets/swagger-ui.css">
</head>
<body>
<div id="reference">Loading the reference…</div>
<script src="/reference/assets/swagger-ui-bundle.js"></script>
<script src="/reference/assets/start.js"></script>
</body>
</html>
`;

const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

export function registerOpenApi(fastify: FastifyInstance, app: App, table: RouteTable): void {
  let doc: string | undefined;
  const cache = new Map<string, Buffer>();
  const budget = async (ip: string) => app.rateLimits.consume('public', ip);
  fastify.get('/openapi.json', async (req, reply) => {
    await budget(req.ip);
    doc ??= JSON.stringify(buildOpenApiDocument(table, { config: app.config, version: API_VERSION }));
    return reply.header('cache-control', 'no-cache').header('access-control-allow-origin', '*').type('application/json; charset=utf-8').send(doc);
  });
  fastify.get('/reference', async (req, reply) => {
    await budget(req.ip);
    return reply.header('content-security-policy', CSP).header('cache-control', 'no-cache').type('text/html; charset=utf-8').send(PAGE);
  });
  fastify.get('/reference/assets/start.js', async (_req, reply) =>
    reply.header('cache-control', 'no-cache').type('text/javascript; charset=utf-8').send(START),
  );
  fastify.get<{ Params: { name: string } }>('/reference/assets/:name', async (req, reply) => {
    const a = Object.hasOwn(ASSETS, req.params.name) ? ASSETS[req.params.name] : undefined;
    if (!a) throw new DomainError('ROUTE_NOT_FOUND', 'No such reference asset');
    let body = cache.get(a.file);
    if (!body) cache.set(a.file, (body = readFileSync(join(uiDir(), a.file))));
    return reply.header('cache-control', 'public, max-age=3600').type(a.type).send(body);
  });
}
