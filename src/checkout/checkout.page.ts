import type { FastifyReply } from 'fastify';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { App } from '../app.js';
import { ENV_PATH } from '../common/environment.js';
import { DomainError, isDomainError } from '../common/errors.js';
import { cspImageOrigin } from '../modules/merchants/merchant.commands.js';
import type { CheckoutState } from '../modules/checkout/checkout-view.service.js';
import { pageRoute, sendHtmlPage, type PageRoute } from '../http/page-routes.js';
import { errorEnvelope } from '../rest/envelope.js';
import { receiptLines, receiptNotes, receiptWords } from './receipt.content.js';

/** Languages the page speaks; the first is the default (the merchants price in rupiah). */
export const LANGS = ['id', 'en'] as const;
export type Lang = (typeof LANGS)[number];

/**
 * `?lang=` wins, then the browser's `Accept-Language` by its q-values, then Indonesian. Only the primary
 * subtag matters (`en-GB` is English).
 */
export function pickLang(query: unknown, acceptLanguage: string | undefined): Lang {
  if (typeof query === 'string' && (LANGS as readonly string[]).includes(query)) return query as Lang;
  const ranked = (acceptLanguage ?? '')
    .split(',')
    .map((part, i) => {
      const [tag = '', ...params] = part.trim().toLowerCase().split(';');
      const q = params.map((p) => /^\s*q=([0-9.]+)\s*$/.exec(p)?.[1]).find((v) => v !== undefined);
      return { lang: tag.split('-')[0]!, q: q === undefined ? 1 : Number(q), i };
    })
    .filter((r) => r.q > 0 && (LANGS as readonly string[]).includes(r.lang))
    .sort((a, b) => b.q - a.q || a.i - b.i);
  return (ranked[0]?.lang as Lang | undefined) ?? LANGS[0];
}

/** HTML-escapes text for element content and quoted attributes. */
export const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * JSON for a `<script type="application/json">` data block: `<` escaped so no string can close the
 * element, and U+2028/9 for old parsers. It is never executed (CSP allows no inline script at all).
 */
export const jsonForHtml = (v: unknown): string =>
  JSON.stringify(v)
    .replace(/</g, '\\u003c')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');

/**
 * The page's only sources are its own origin: the script and styles below, QR images as data: URIs,
 * the API and graphql-ws on the same host, and, when the merchant set a logo, exactly that logo's
 * origin as an image source (per response: one merchant's page never allows another's host). No
 * framing (clickjacking a payment page is the classic attack), no inline script, no referrer (the URL
 * carries the checkout key).
 */
export function cspFor(logoUrl?: string | null): string {
  // A stored URL whose host is not one plain host (a wildcard, CSP syntax) adds no source at all.
  const logoOrigin = logoUrl ? cspImageOrigin(logoUrl) : null;
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    `img-src 'self' data:${logoOrigin ? ' ' + logoOrigin : ''}`,
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/**
 * The logo a page may show: the merchant's setting, for production orders only when https (a logo set
 * while trying the sandbox with a local http server never reaches a live shopper's page).
 */
export function pageLogo(logoUrl: string | undefined | null, environment: string): string | null {
  if (!logoUrl) return null;
  if (environment === 'production' && !logoUrl.startsWith('https://')) return null;
  return cspImageOrigin(logoUrl) ? logoUrl : null;
}

/** Finds the static assets next to this file (ts-jest) or, from dist/, back in the source tree. */
function assetDir(): string {
  const candidates = [__dirname];
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    candidates.push(path.join(dir, 'src', 'checkout'));
    if (path.dirname(dir) === dir) break;
  }
  const found = candidates.find((d) => existsSync(path.join(d, 'checkout.client.js')));
  if (!found) throw new Error(`checkout assets not found (looked in ${candidates.join(', ')})`);
  return found;
}

interface Asset {
  type: string;
  body: Buffer;
}

function loadAssets(): Record<string, Asset> {
  const dir = assetDir();
  // The graphql-ws client as its authors ship it for browsers (UMD global `graphqlWs`).
  const gqlWs = path.join(path.dirname(require.resolve('graphql-ws')), '..', 'umd', 'graphql-ws.min.js');
  return {
    'checkout.js': { type: 'text/javascript; charset=utf-8', body: readFileSync(path.join(dir, 'checkout.client.js')) },
    'refund.js': { type: 'text/javascript; charset=utf-8', body: readFileSync(path.join(dir, 'refund.client.js')) },
    'checkout.css': { type: 'text/css; charset=utf-8', body: readFileSync(path.join(dir, 'checkout.css')) },
    'graphql-ws.js': { type: 'text/javascript; charset=utf-8', body: readFileSync(gqlWs) },
  };
}

export interface PageBoot {
  kind: 'checkout' | 'link' | 'error' | 'receipt';
  lang: Lang;
  env: string;
  orderId?: string;
  orderNo?: string;
  linkId?: string;
  merchant?: string;
  /** For `error`: a stable code the script turns into a sentence in the shopper's language. */
  error?: { code: string; message: string };
}

/**
 * The page shell: the header (merchant logo and name, escaped here), an empty main the script fills,
 * and the data block. The logo is decorative next to the name (empty alt); its URL must be the one
 * `cspFor` allowed for this response.
 */
export function renderShell(boot: PageBoot, title: string, logoUrl: string | null = null): string {
  const logo = logoUrl ? `<img class="logo" id="logo" src="${escapeHtml(logoUrl)}" alt="" referrerpolicy="no-referrer">` : '';
  const merchant = `<span class="brand">${logo}<span class="merchant" id="merchant">${boot.merchant ? escapeHtml(boot.merchant) : ''}</span></span>`;
  return `<!doctype html>
  <html lang="${boot.lang}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
  <meta name="referrer" content="no-referrer"><title>${escapeHtml(title)}</title>
  <link rel="stylesheet" href="/checkout/assets/checkout.css"></head>
  <body><header class="top">${merchant}<button type="button" id="lang" class="lang"></button></header>
  <main id="view" tabindex="-1"><p class="muted" id="loading">…</p></main>
  <div id="live" class="sr-only" role="status" aria-live="polite"></div>
  <script type="application/json" id="boot">${jsonForHtml(boot)}</script>
  <script src="/checkout/assets/graphql-ws.js"></script>
  <script src="/checkout/assets/checkout.js"></script>
  </body></html>`;
}

/**
 * The printable receipt (`/checkout/:orderId/receipt?key=`): rendered here, readable without script
 * (the script only wires the Print and language buttons). The paid order's lines with each
 * transaction hash and its explorer link where one exists, the way back to the merchant and to the
 * payment page; an unpaid order gets a sentence instead.
 */
export function renderReceipt(state: CheckoutState, lang: Lang, checkoutUrl: string, logoUrl: string | null): string {
  const w = receiptWords(lang);
  const lines = receiptLines(state, lang);
  const body = lines
    ? `<dl id="receipt">${lines
        .map(
          (l) =>
            `<dt>${escapeHtml(l.label)}</dt><dd${l.mono ? ' class="mono"' : ''}>${escapeHtml(l.value)}${l.href ? ` <a class="noprint-href" href="${escapeHtml(l.href)}" rel="noreferrer" target="_blank">${escapeHtml(w.explorer)}</a><span class="print-only"> ${escapeHtml(l.href)}</span>` : ''}</dd>`,
        )
        .join('')}</dl>${receiptNotes(state, lang)
        .map((n) => `<p class="muted">${escapeHtml(n)}</p>`)
        .join('')}`
    : `<p id="not-paid" class="notice">${escapeHtml(w.notPaid)} (${escapeHtml(w.status(state.order.status))})</p>`;
  const back = state.order.return_url
    ? `<a class="btn" id="return" href="${escapeHtml(state.order.return_url)}" rel="noreferrer">${escapeHtml(lang === 'id' ? `Kembali ke ${state.merchant.name}` : `Back to ${state.merchant.name}`)}</a>`
    : '';
  const page = `<a class="btn secondary" id="to-checkout" href="${escapeHtml(checkoutUrl)}">${lang === 'id' ? 'Halaman pembayaran' : 'Payment page'}</a>`;
  const print = lines ? `<button type="button" id="print">${lang === 'id' ? 'Cetak' : 'Print'}</button>` : '';
  const boot: PageBoot = { kind: 'receipt', lang, env: state.environment, merchant: state.merchant.name };
  const logo = logoUrl ? `<img class="logo" src="${escapeHtml(logoUrl)}" alt="" referrerpolicy="no-referrer">` : '';
  return `<!doctype html>
  <html lang="${lang}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
  <meta name="referrer" content="no-referrer"><title>${escapeHtml(`${w.title} · ${state.order.order_no} · ${state.merchant.name}`)}</title>
  <link rel="stylesheet" href="/checkout/assets/checkout.css"></head>
  <body><header class="top"><span class="brand">${logo}<span class="merchant" id="merchant">${escapeHtml(state.merchant.name)}</span></span><button type="button" id="lang" class="lang noprint"></button></header>
  <main id="view"><section class="card state-ok"><h1 id="receipt-title">${escapeHtml(w.title)}</h1>${body}<p class="row noprint">${print}${page}${back}</p></section></main>
  <div id="live" class="sr-only" role="status" aria-live="polite"></div>
  <script type="application/json" id="boot">${jsonForHtml(boot)}</script>
  <script src="/checkout/assets/checkout.js"></script>
  </body></html>`;
}

const send = (reply: FastifyReply, status: number, html: string, logoUrl: string | null = null) => sendHtmlPage(reply, status, html, cspFor(logoUrl));

/**
 * The routes of the hosted pages (registered by the server with every page table): the order checkout behind an order's `url` (`/checkout/:orderId?key=`), the payment
 * link page behind a link's `link` (`/pay/:id`), their static assets, and the checkout's read model
 * (`/checkout/:orderId/state`, key in the `x-checkout-key` header). The pages themselves only call
 * the public REST flow and the `orderUpdated` subscription with the order's scoped key.
 */
export function checkoutPageRoutes(app: App): PageRoute[] {
  const assets = loadAssets();
  const checkout = app.checkoutView;
  return [
    pageRoute<{ Params: { file: string } }>('/checkout/assets/:file', async (req, reply) => {
      const a = Object.hasOwn(assets, req.params.file) ? assets[req.params.file] : undefined;
      if (!a) return reply.code(404).type('text/plain').send('Not found');
      return reply.type(a.type).header('cache-control', 'public, max-age=300').header('x-content-type-options', 'nosniff').send(a.body);
    }),

    pageRoute<{ Params: { orderId: string }; Querystring: { key?: string; lang?: string } }>('/checkout/:orderId', async (req, reply) => {
      const lang = pickLang(req.query.lang, req.headers['accept-language']);
      const key = typeof req.query.key === 'string' ? req.query.key : '';
      const em = app.orm.em.fork();
      try {
        await app.rateLimits.consume('public', req.ip);
        const caller = await checkout.authenticateForStatus(em, key);
        if (caller.orderId !== req.params.orderId)
          return send(
            reply,
            403,
            renderShell({ kind: 'error', lang, env: '', error: { code: 'SCOPE_DENIED', message: 'This link is not valid for this order.' } }, 'Checkout'),
          );
        const { merchant, orderNo, logoUrl } = await checkout.shell(em, caller);
        const logo = pageLogo(logoUrl, caller.environment);
        return send(
          reply,
          200,
          renderShell(
            { kind: 'checkout', lang, env: ENV_PATH[caller.environment], orderId: caller.orderId, orderNo, merchant },
            `${orderNo} · ${merchant}`,
            logo,
          ),
          logo,
        );
      } catch (e) {
        if (!isDomainError(e)) throw e;
        return send(reply, e.httpStatus, renderShell({ kind: 'error', lang, env: '', error: { code: e.code, message: e.message } }, 'Checkout'));
      }
    }),

    pageRoute<{ Params: { orderId: string }; Querystring: { key?: string; lang?: string } }>('/checkout/:orderId/receipt', async (req, reply) => {
      const lang = pickLang(req.query.lang, req.headers['accept-language']);
      const key = typeof req.query.key === 'string' ? req.query.key : '';
      const em = app.orm.em.fork();
      try {
        await app.rateLimits.consume('public', req.ip);
        const caller = await checkout.authenticateForStatus(em, key);
        if (caller.orderId !== req.params.orderId) throw new DomainError('SCOPE_DENIED', 'This link is not valid for this order.');
        const [state, shell] = await Promise.all([checkout.state(em, caller.orderId), checkout.shell(em.fork(), caller)]);
        const logo = pageLogo(shell.logoUrl, caller.environment);
        const back = `/checkout/${encodeURIComponent(caller.orderId)}?key=${encodeURIComponent(key)}&lang=${lang}`;
        return send(reply, 200, renderReceipt(state, lang, back, logo), logo);
      } catch (e) {
        if (!isDomainError(e)) throw e;
        return send(reply, e.httpStatus, renderShell({ kind: 'error', lang, env: '', error: { code: e.code, message: e.message } }, 'Checkout'));
      }
    }),

    pageRoute<{ Params: { orderId: string } }>('/checkout/:orderId/state', async (req, reply) => {
      reply.header('cache-control', 'no-store');
      const raw = req.headers['x-checkout-key'];
      const em = app.orm.em.fork();
      try {
        await app.rateLimits.consume('public', req.ip);
        const caller = await checkout.authenticateForStatus(em, typeof raw === 'string' ? raw : '');
        if (caller.orderId !== req.params.orderId) throw new DomainError('SCOPE_DENIED', 'This checkout key belongs to another order');
        return reply.send({ status_code: 200, message: 'OK', data: await checkout.state(em, caller.orderId) });
      } catch (e) {
        if (!isDomainError(e)) throw e;
        return reply.code(e.httpStatus).send(errorEnvelope(e));
      }
    }),

    pageRoute<{ Params: { id: string }; Querystring: { lang?: string } }>('/pay/:id', async (req, reply) => {
      const lang = pickLang(req.query.lang, req.headers['accept-language']);
      const em = app.orm.em.fork();
      try {
        await app.rateLimits.consume('public', req.ip);
      } catch (e) {
        if (!isDomainError(e)) throw e;
        return send(reply, e.httpStatus, renderShell({ kind: 'error', lang, env: '', error: { code: e.code, message: e.message } }, 'Payment link'));
      }
      const link = await checkout.linkShell(em, req.params.id);
      if (!link)
        return send(
          reply,
          404,
          renderShell({ kind: 'error', lang, env: '', error: { code: 'PAYMENT_LINK_NOT_FOUND', message: 'Payment link not found' } }, 'Payment link'),
        );
      const { merchant } = link;
      const logo = pageLogo(link.logoUrl, link.environment);
      return send(
        reply,
        200,
        renderShell({ kind: 'link', lang, env: ENV_PATH[link.environment], linkId: link.id, merchant }, `${link.title} · ${merchant}`, logo),
        logo,
      );
    }),
  ];
}
