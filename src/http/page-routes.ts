import type { FastifyInstance, FastifyReply, FastifyRequest, RouteGenericInterface } from 'fastify';

/**
 * A hosted page's route (the checkout pages, the dashboard): a GET that answers HTML, an asset or, for
 * a page's own state read, the REST envelope. Pages declare their routes as a table, as REST does
 * (rest/route-table.ts); the server registers every table in one place (`ServerParts.pages`).
 */
export interface PageRoute {
  /** GET unless a page takes a form post of its own (the refund claim). */
  method?: 'GET' | 'POST';
  url: string;
  handler: (req: FastifyRequest, reply: FastifyReply) => Promise<unknown>;
}

/** A typed page route (its params and query as fastify types them). */
export function pageRoute<T extends RouteGenericInterface>(
  url: string,
  handler: (req: FastifyRequest<T>, reply: FastifyReply) => Promise<unknown>,
  method: 'GET' | 'POST' = 'GET',
): PageRoute {
  return { method, url, handler: handler as PageRoute['handler'] };
}

export function registerPages(fastify: FastifyInstance, routes: readonly PageRoute[]): void {
  for (const r of routes) fastify.route({ method: r.method ?? 'GET', url: r.url, handler: r.handler });
}

/**
 * An HTML page's answer, with the headers every hosted page sends: never cached (it may carry an
 * order's state), its own CSP, no referrer, no sniffing, never framed.
 */
export function sendHtmlPage(reply: FastifyReply, status: number, html: string, csp: string) {
  return reply
    .code(status)
    .type('text/html; charset=utf-8')
    .header('cache-control', 'no-store')
    .header('content-security-policy', csp)
    .header('referrer-policy', 'no-referrer')
    .header('x-content-type-options', 'nosniff')
    .header('x-frame-options', 'DENY')
    .send(html);
}
