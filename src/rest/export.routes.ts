import type { App } from '../app.js';
import type { ExportOrdersCommand, ExportPaymentsCommand } from '../modules/analytics/csv-export.commands.js';
import type { CsvExport } from '../modules/analytics/csv-export.service.js';
import type { RestResult, RestRoute } from './routes.js';

/** Legacy query names (snake_case) → the typed export command; anything else is left for the command to refuse. */
function toExportCommand(query: unknown): ExportOrdersCommand & ExportPaymentsCommand {
  const q = { ...((query ?? {}) as Record<string, unknown>) };
  const renamed: Record<string, string> = { token_address: 'tokenAddress', tz: 'timeZone' };
  for (const [from, to] of Object.entries(renamed)) {
    if (from in q) {
      q[to] = q[from];
      delete q[from];
    }
  }
  return q as ExportOrdersCommand & ExportPaymentsCommand;
}

const csv = (e: CsvExport): RestResult => ({
  raw: { contentType: 'text/csv; charset=utf-8', body: e.rows, headers: { 'content-disposition': `attachment; filename="${e.filename}"`, 'x-content-type-options': 'nosniff' } },
});

/**
 * CSV exports for dashboards (`Authorization: Bearer <access token>`), environment-scoped: the same
 * filters as the GraphQL `orders` query, streamed (docs/api.md "CSV export").
 */
export function exportRoutes(app: App): RestRoute[] {
  return [
    {
      method: 'GET',
      url: '/merchant/export/orders.csv',
      auth: 'dashboard',
      limit: 'merchant',
      handler: async (ctx, req) => csv(await app.exports.orders(ctx, toExportCommand(req.query))),
    },
    {
      method: 'GET',
      url: '/merchant/export/payments.csv',
      auth: 'dashboard',
      limit: 'merchant',
      handler: async (ctx, req) => csv(await app.exports.payments(ctx, toExportCommand(req.query))),
    },
  ];
}
