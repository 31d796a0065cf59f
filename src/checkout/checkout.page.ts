import type { FastifyInstance } from 'fastify';
import type { App } from '../app.js';
import { ENV_PATH } from '../common/environment.js';
import { isDomainError } from '../common/errors.js';
import { Order } from '../modules/orders/order.entity.js';
import { orderView } from '../rest/order.views.js';

const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * The hosted checkout page behind an order's `url`: a small server-rendered page that uses the
 * order's scoped key (never the merchant API key) to list tokens, lock the rate, create the deposit,
 * show the QR image and poll the status. Everything it does is the public REST flow.
 */
export function registerCheckoutPage(fastify: FastifyInstance, app: App): void {
  fastify.get<{ Params: { orderId: string }; Querystring: { key?: string } }>('/checkout/:orderId', async (req, reply) => {
    const key = typeof req.query.key === 'string' ? req.query.key : '';
    const em = app.orm.em.fork();
    let caller;
    try {
      caller = await app.checkoutKeys.authenticate(em, key);
    } catch (e) {
      const message = isDomainError(e) ? e.message : 'Invalid checkout link';
      return reply.code(401).type('text/html').send(`<!doctype html><meta charset=utf-8><title>Checkout</title><p>${esc(message)}</p>`);
    }
    if (caller.orderId !== req.params.orderId) return reply.code(403).type('text/html').send('<!doctype html><meta charset=utf-8><p>This link is not valid for this order.</p>');
    const order = await em.findOneOrFail(Order, caller.orderId);
    const boot = JSON.stringify({ base: `/api/v2/${ENV_PATH[caller.environment]}`, key, order: orderView(order) }).replace(/</g, '\\u003c');
    return reply
      .type('text/html')
      .header('cache-control', 'no-store')
      .header('content-security-policy', "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src 'self'")
      .send(PAGE.replace('__BOOT__', boot));
  });
}

const PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>Checkout</title>
<style>body{font:16px system-ui,sans-serif;max-width:420px;margin:2rem auto;padding:0 1rem;color:#222}
h1{font-size:1.3rem}select,button{font:inherit;padding:.4rem;margin:.3rem 0;width:100%}
.box{border:1px solid #ddd;border-radius:8px;padding:1rem;margin:1rem 0}.muted{color:#777;font-size:.9rem}
code{word-break:break-all}img{width:100%;max-width:320px;display:block;margin:auto}</style></head>
<body><h1>Pay order <span id="no"></span></h1>
<div class="box"><div id="amount"></div><div class="muted" id="status"></div></div>
<div id="choose" class="box"><label>Token<select id="token"></select></label>
<label>Wallet<select id="wallet"><option>METAMASK</option><option>WALLETCONNECT</option><option>TRUSTWALLET</option><option>PHANTOM</option></select></label>
<button id="go">Show payment QR</button><div id="err" class="muted"></div></div>
<div id="pay" class="box" hidden><img id="qr" alt="payment QR"><p>Send exactly <b id="total"></b> to<br><code id="addr"></code></p>
<p class="muted">Network: <span id="net"></span> · expires <span id="exp"></span></p></div>
<script>
const B = __BOOT__;
const $ = (id) => document.getElementById(id);
const api = async (path, body) => {
  const r = await fetch(B.base + path, { method: body ? 'POST' : 'GET', headers: { 'content-type': 'application/json', 'api-key': B.key }, body: body ? JSON.stringify(body) : undefined });
  const j = await r.json();
  if (j.status_code >= 400) throw new Error(j.message);
  return j.data;
};
$('no').textContent = B.order.order_no;
$('amount').textContent = Number(B.order.amount).toLocaleString('id-ID') + ' IDR';
$('status').textContent = 'Status: ' + B.order.status;
let tokens = [];
api('/listToken').then((d) => {
  tokens = d.tokens;
  $('token').innerHTML = tokens.map((t, i) => '<option value="' + i + '">' + t.symbol + ' on ' + t.network + '</option>').join('');
}).catch((e) => ($('err').textContent = e.message));
$('go').onclick = async () => {
  $('err').textContent = '';
  const t = tokens[Number($('token').value)];
  const req = { merchant_id: B.order.merchant_id, transactionID: B.order.order_no, tokenAddress: t.tokenAddress, network: t.network };
  try {
    await api('/merchant/fiat/checkOrderRate', req);
    const d = await api('/pgqr/fiat/create', { ...req, walletType: $('wallet').value });
    const q = new URLSearchParams({ ...req, walletType: $('wallet').value, format: 'svg', key: B.key });
    $('qr').src = B.base + '/pgqr/fiat/qr?' + q;
    $('total').textContent = d.request.totalAmount + ' ' + d.request.tokenName;
    $('addr').textContent = d.request.destinationAddress;
    $('net').textContent = d.request.network;
    $('exp').textContent = new Date(d.request.expiredAt * 1000).toLocaleTimeString();
    $('pay').hidden = false;
  } catch (e) { $('err').textContent = e.message; }
};
setInterval(async () => {
  try {
    const d = await api('/merchant/fiat/getOrder', { merchant_id: B.order.merchant_id, order_no: B.order.order_no });
    $('status').textContent = 'Status: ' + d.request.status;
  } catch (e) {}
}, 4000);
</script></body></html>`;
