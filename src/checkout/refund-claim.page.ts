import type { FastifyReply, FastifyRequest } from 'fastify';
import { explorerTxUrl, networkDisplayName } from '../chains/registry.js';
import { pageRoute, sendHtmlPage, type PageRoute } from '../http/page-routes.js';
import type { App } from '../app.js';
import { sha256Hex } from '../common/crypto.js';
import { DomainError, isDomainError } from '../common/errors.js';
import { formatDecimal } from '../common/money.js';
import type { ClaimInfo } from '../modules/refunds/refund.service.js';
import { envelope } from '../rest/envelope.js';
import { sendError } from '../rest/plugin.js';
import { cspFor, escapeHtml, jsonForHtml, pickLang, type Lang } from './checkout.page.js';

/** The header the claim page sends its token in (never the URL: URLs reach logs and referrers). */
export const CLAIM_TOKEN_HEADER = 'x-claim-token';

/** What the claim page's script reads (`GET /refund/claim`, `POST /refund/claim`): display values only, no internal ids. */
export interface ClaimView {
  status: ClaimInfo['status'];
  /** True while the page takes an address. */
  open: boolean;
  merchant: string;
  order_no: string;
  network: ClaimInfo['network'];
  network_name: string;
  token_symbol: string;
  /** Token units, decimal. */
  amount: string;
  /** What the transfer carries (amount less a deducted network fee); null until signed. */
  sent_amount: string | null;
  /** tank: the gateway pays the network fee; deduct: it comes off the amount. */
  fee_mode: ClaimInfo['feeMode'];
  reason: string | null;
  to_address: string | null;
  tx_hash: string | null;
  /** The transaction on the network's public explorer; null where none can see it (local dev chains). */
  explorer_url: string | null;
}

export function claimView(info: ClaimInfo, config: App['config']): ClaimView {
  return {
    status: info.status,
    open: info.open,
    merchant: info.merchantName,
    order_no: info.orderNo,
    network: info.network,
    network_name: networkDisplayName(info.network),
    token_symbol: info.tokenSymbol,
    amount: formatDecimal(BigInt(info.amount), info.decimals),
    sent_amount: info.sentAmount === null ? null : formatDecimal(BigInt(info.sentAmount), info.decimals),
    fee_mode: info.feeMode,
    reason: info.reason,
    to_address: info.toAddress,
    tx_hash: info.txHash,
    explorer_url: info.txHash ? explorerTxUrl(info.environment, info.network, info.txHash, config.DEV_CHAINS) : null,
  };
}

/**
 * The claim page's shell. The token is in the URL's fragment (`/refund#token=…`), which browsers never
 * send: the server learns which refund only from the script's JSON calls, so the shell names no
 * merchant (the script fills it in) and, its CSP being fixed before the refund is known, shows no logo.
 */
export function renderClaimShell(lang: Lang): string {
  const title = lang === 'id' ? 'Pengembalian dana' : 'Refund';
  return `<!doctype html>
<html lang="${lang}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="referrer" content="no-referrer"><title>${escapeHtml(title)}</title>
<link rel="stylesheet" href="/checkout/assets/checkout.css"></head>
<body><header class="top"><span class="brand"><span class="merchant" id="merchant"></span></span><button type="button" id="lang" class="lang"></button></header>
<main id="view" tabindex="-1"><p class="muted" id="loading">…</p></main>
<div id="live" class="sr-only" role="status" aria-live="polite"></div>
<script type="application/json" id="boot">${jsonForHtml({ kind: 'refund', lang })}</script>
<script src="/checkout/assets/refund.js"></script>
</body></html>`;
}

const sendPage = (reply: FastifyReply, status: number, html: string) => sendHtmlPage(reply, status, html, cspFor(null));

/** The token of a JSON call: a string or nothing (the service answers CLAIM_NOT_FOUND for anything malformed). */
const tokenOf = (v: unknown): string => (typeof v === 'string' ? v : '');

/**
 * The customer's refund claim page (docs/refunds.md): `GET /refund` (the page; the token stays in the
 * fragment), `GET /refund/claim` (the refund as the page shows it; token in `x-claim-token`) and
 * `POST /refund/claim` (`{token, address, confirm_address}`). Anonymous: the token is the credential,
 * looked up by its SHA-256 only. Every call spends the IP's claim budget (`claimIp`), never a merchant's
 * quota nor the public pages' budget; an address submission also spends the link's own (`claimToken`,
 * keyed by the token's hash), so one link cannot be used to probe addresses at the per-IP rate.
 */
export function refundClaimPageRoutes(app: App): PageRoute[] {
  return [
    pageRoute<{ Querystring: { lang?: string } }>('/refund', async (req, reply) => {
      const lang = pickLang(req.query.lang, req.headers['accept-language']);
      try {
        await app.rateLimits.consume('public', req.ip);
      } catch (e) {
        if (!isDomainError(e)) throw e;
        return sendPage(reply, e.httpStatus, renderClaimShell(lang));
      }
      return sendPage(reply, 200, renderClaimShell(lang));
    }),

    pageRoute('/refund/claim', async (req: FastifyRequest, reply) => {
      reply.header('cache-control', 'no-store');
      try {
        await app.rateLimits.consume('claimIp', req.ip);
        const info = await app.refunds.claimInfo(app.orm.em.fork(), tokenOf(req.headers[CLAIM_TOKEN_HEADER]));
        return reply.send(envelope(200, 'OK', claimView(info, app.config)));
      } catch (e) {
        if (!isDomainError(e)) throw e;
        return sendError(req, reply, e);
      }
    }),

    pageRoute<{ Body: unknown }>(
      '/refund/claim',
      async (req, reply) => {
        reply.header('cache-control', 'no-store');
        try {
          await app.rateLimits.consume('claimIp', req.ip);
          const body = req.body;
          if (typeof body !== 'object' || body === null || Array.isArray(body))
            throw new DomainError('VALIDATION_FAILED', 'Send a JSON object: {token, address, confirm_address}');
          const b = body as Record<string, unknown>;
          const token = tokenOf(b.token);
          await app.rateLimits.consume('claimToken', sha256Hex(token));
          const info = await app.refunds.claim(app.orm.em.fork(), token, b.address as string, b.confirm_address as string);
          return reply.send(envelope(200, 'OK', claimView(info, app.config)));
        } catch (e) {
          if (!isDomainError(e)) throw e;
          return sendError(req, reply, e);
        }
      },
      'POST',
    ),
  ];
}
