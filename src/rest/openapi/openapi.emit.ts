import type { App } from '../../app.js';
import { parseConfig, type Config } from '../../config/index.js';
import { authRoutes } from '../auth.routes.js';
import { environmentRoutes } from '../route-table.js';
import { buildOpenApiDocument } from './openapi.document.js';

/** The REST API's version (the paths' `/api/v2`); the document's `info.version`. */
export const API_VERSION = '2.0.0';

/**
 * The committed document (schema/openapi.json): the route table as every deployment registers it,
 * with the configuration's defaults (limits, rate budgets). Route factories only read `app.config`
 * when building their table, so no database or chain is needed.
 */
export function defaultOpenApiDocument(): Record<string, unknown> {
  const config = parseConfig({}) as unknown as Config;
  const app = { config } as unknown as App;
  return buildOpenApiDocument({ global: authRoutes(app), environment: environmentRoutes(app) }, { config, version: API_VERSION });
}

/** The document as committed: 2-space JSON and a final newline. */
export const formatOpenApiDocument = (doc: unknown): string => JSON.stringify(doc, null, 2) + '\n';
