import type { App } from '../app.js';
import { parseTimeParam, type ExportOrdersCommand, type ExportPaymentsCommand } from '../modules/analytics/csv-export.commands.js';
import type { AuditFilter } from '../modules/audit/audit.service.js';
import type { CsvExport } from '../modules/analytics/csv-export.service.js';
import type { RestResult, RestRoute } from './routes.js';

/** Query names (snake_case) → the typed export command; anything else is left for the command to refuse. */
function renamed(query: unknown, names: Record<string, string>): Record<string, unknown> {
  const q = { ...((query ?? {}) as Record<string, unknown>) };
  for (const [from, to] of Object.entries(names)) {
    // An alias given next to its canonical name stays as it is: the command refuses the unknown key.
    if (from in q && !(to in q)) {
      q[to] = q[from];
      delete q[from];
    }
  }
  return q;
}

/** A repeated or comma-separated query value as one list (`a,b` and `x=a&x=b` alike). */
const commaList = (v: unknown): unknown[] =>
  [v].flat().flatMap((x) =>
    typeof x === 'string'
      ? x
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean)
      : [x],
  );

const ORDER_QUERY_NAMES: Record<string, string> = {
  status: 'statuses',
  from: 'createdFrom',
  to: 'createdTo',
  created_from: 'createdFrom',
  created_to: 'createdTo',
  paid_from: 'paidFrom',
  paid_to: 'paidTo',
  token_address: 'tokenAddress',
  payment_link_id: 'paymentLinkId',
  tz: 'timeZone',
};
const ORDER_TIMES = ['createdFrom', 'createdTo', 'paidFrom', 'paidTo'];

/**
 * The orders export's query string → the GraphQL `orders` filter (exportOrdersCommand, whose parser
 * the listing shares): same names (snake_case and the earlier `status`/`from`/`to` accepted too),
 * statuses comma-separated or repeated, times ISO-8601 or Unix seconds, `overpaid=true|false`. Only
 * the types of query-string values are converted here; what a value may be is the command's rule.
 */
function toOrderExportCommand(query: unknown): ExportOrdersCommand {
  const q = renamed(query, ORDER_QUERY_NAMES);
  if (q.statuses !== undefined) q.statuses = commaList(q.statuses);
  for (const k of ORDER_TIMES) if (typeof q[k] === 'string') q[k] = parseTimeParam(q[k]);
  if (q.overpaid === 'true' || q.overpaid === 'false') q.overpaid = q.overpaid === 'true';
  return q as ExportOrdersCommand;
}

const PAYMENT_QUERY_NAMES: Record<string, string> = {
  status: 'statuses',
  from: 'detectedFrom',
  to: 'detectedTo',
  detected_from: 'detectedFrom',
  detected_to: 'detectedTo',
  token_address: 'tokenAddress',
  tz: 'timeZone',
};
const PAYMENT_TIMES = ['detectedFrom', 'detectedTo'];

/**
 * The payments export's query string → the GraphQL `payments` filter (exportPaymentsCommand, whose
 * fields the listing shares), with the orders export's conventions: snake_case names (and the earlier
 * `status`/`from`/`to`), statuses comma-separated or repeated (`pending` or GraphQL's `PENDING`),
 * times ISO-8601 or Unix seconds.
 */
function toPaymentExportCommand(query: unknown): ExportPaymentsCommand {
  const q = renamed(query, PAYMENT_QUERY_NAMES);
  // GraphQL's enum names (PENDING) or the values the CSV writes (pending): either spelling.
  if (q.statuses !== undefined) q.statuses = commaList(q.statuses).map((v) => (typeof v === 'string' ? v.toLowerCase() : v));
  for (const k of PAYMENT_TIMES) if (typeof q[k] === 'string') q[k] = parseTimeParam(q[k]);
  return q as ExportPaymentsCommand;
}

const csv = (e: CsvExport): RestResult => ({
  raw: {
    contentType: 'text/csv; charset=utf-8',
    body: e.rows,
    headers: { 'content-disposition': `attachment; filename="${e.filename}"`, 'x-content-type-options': 'nosniff' },
  },
});

/**
 * CSV exports for dashboards (`Authorization: Bearer <access token>`), environment-scoped: the same
 * filters as the GraphQL `orders` and `payments` queries, streamed (docs/api.md "CSV export").
 */
export function exportRoutes(app: App): RestRoute[] {
  return [
    {
      method: 'GET',
      url: '/merchant/export/orders.csv',
      auth: 'dashboard',
      limit: 'merchant',
      handler: async (ctx, req) => csv(await app.exports.orders(ctx, toOrderExportCommand(req.query))),
    },
    {
      method: 'GET',
      url: '/merchant/export/payments.csv',
      auth: 'dashboard',
      limit: 'merchant',
      handler: async (ctx, req) => csv(await app.exports.payments(ctx, toPaymentExportCommand(req.query))),
    },
    {
      method: 'GET',
      url: '/merchant/export/audit.csv',
      auth: 'dashboard',
      limit: 'merchant',
      handler: async (ctx, req) => csv(await app.audit.exportCsv(ctx, toAuditExportFilter(req.query))),
    },
  ];
}

/** `action` (comma-separated or repeated), `from`, `to` (ISO-8601 or Unix seconds) → the audit listing's filter. */
function toAuditExportFilter(query: unknown): AuditFilter {
  const q = { ...((query ?? {}) as Record<string, unknown>) };
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(q)) {
    if (k === 'action' || k === 'actions') out.actions = commaList(v);
    else if (k === 'from' || k === 'to') out[k] = typeof v === 'string' ? parseTimeParam(v) : v;
    else out[k] = v;
  }
  return out as AuditFilter;
}
