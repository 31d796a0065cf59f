/**
 * Customer mails through a real SMTP server (smtp-server, on loopback) read back with mailparser:
 * the receipt on Success, the notices on Underpaid and Expired with what to do, queued by the status
 * change itself (customer_mail_outbox) and sent by the worker's job. Sent once per order and kind,
 * also with two senders racing; a queue survives a restart; a stalled SMTP server never holds up the
 * status writer; a refused recipient fails permanently, a dead server is retried.
 */
import pino from 'pino';
import { CustomerMailService, smtpTransport } from '../../src/modules/customer-mail/customer-mail.service';
import type { OrderStatus } from '../../src/modules/orders/order.transitions';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { http } from '../support/http';
import { eventually } from '../support/order-watch';
import { startSmtp, type TestSmtp } from '../support/smtp';
import { SEPOLIA_USDT } from '../support/webhooks';

jest.setTimeout(120_000);

const T = '/api/v2/testnet';
let smtp: TestSmtp;
let db: TestDatabase;
let gw: TestGateway;
let m: Awaited<ReturnType<typeof createMerchant>>;
let seq = 0;

const smtpEnv = (port: number) => ({ SMTP_HOST: '127.0.0.1', SMTP_PORT: String(port), SMTP_FROM: 'Receipts <receipts@gateway.test>', SMTP_POLL_MS: '200' });

beforeAll(async () => {
  smtp = await startSmtp();
  db = await createTestDatabase();
  gw = await startTestGateway(smtpEnv(smtp.port), { db });
  m = await createMerchant(gw.app);
  await gw.app.orm.em.fork().execute(`update merchants set name = 'Toko Batik Sari' where id = ?`, [m.merchantId]);
});
afterAll(async () => {
  await gw?.close();
  await db?.drop();
  await smtp?.close();
});

async function order(email: string | null, withDeposit = false) {
  const orderNo = `MAIL-${++seq}-${Date.now()}`;
  const r = await http(gw.url, `${T}/merchant/fiat/order`, {
    body: { merchant_id: m.merchantId, order_no: orderNo, amount: '150000', name: 'Budi', ...(email && { email }) },
    headers: { 'api-key': m.sandboxKey },
  });
  expect(r.status).toBe(201);
  const key = r.body.data.key as string;
  if (withDeposit) {
    const req = { merchant_id: m.merchantId, transactionID: orderNo, tokenAddress: SEPOLIA_USDT, network: 'ETHEREUM' };
    expect((await http(gw.url, `${T}/merchant/fiat/checkOrderRate`, { body: req, headers: { 'api-key': key } })).status).toBe(200);
    expect((await http(gw.url, `${T}/pgqr/fiat/create`, { body: { ...req, walletType: 'METAMASK' }, headers: { 'api-key': key } })).status).toBe(201);
  }
  return { orderNo, orderId: key.split('_')[1]!, key };
}

/** The real status writer, as settlement and expiry call it. */
const move = (orderId: string, to: OrderStatus, app = gw.app) =>
  app.orm.em.fork().transactional((em) => app.orderStatus.transition(em, orderId, to, { kind: 'test' }));

const mailsTo = (addr: string) => smtp.mails.filter((x) => x.to.includes(addr));
const outbox = async (orderId: string) =>
  gw.app.orm.em
    .fork()
    .execute<{ kind: string; state: string; attempts: number; last_error: string | null }[]>(
      `select kind, state, attempts, last_error from customer_mail_outbox where order_id = ? order by kind`,
      [orderId],
    );

it('Success sends one receipt: bilingual, the order, the merchant, the amount; sandbox marked; plain text and HTML agree', async () => {
  const to = `budi.${Date.now()}@example.id`;
  const o = await order(to, true);
  await move(o.orderId, 'Processing');
  await move(o.orderId, 'Success');
  await eventually(async () => mailsTo(to).length === 1, 'the receipt', 60_000);
  const mail = mailsTo(to)[0]!;
  expect(mail.from).toBe('receipts@gateway.test');
  expect(mail.parsed.subject).toBe(`[Sandbox] Bukti pembayaran pesanan ${o.orderNo} di Toko Batik Sari / Receipt for order ${o.orderNo} at Toko Batik Sari`);
  expect(mail.parsed.text).toContain('Halo Budi,');
  expect(mail.parsed.text).toContain('Toko Batik Sari telah menerima pembayaran Anda');
  expect(mail.parsed.text).toContain('Toko Batik Sari has received your payment');
  expect(mail.parsed.text).toContain(`Pesanan: ${o.orderNo}`);
  expect(mail.parsed.text).toMatch(/Amount: IDR\s?150,000/);
  expect(mail.parsed.html).toContain(`${o.orderNo}`);
  expect(mail.parsed.messageId).toMatch(/@127\.0\.0\.1>$/);
  expect(mail.parsed.headers.get('auto-submitted')).toBe('auto-generated');
  expect(await outbox(o.orderId)).toEqual([{ kind: 'receipt', state: 'sent', attempts: 1, last_error: null }]);
  // Success again later (reorged away, then paid again) queues nothing new: one receipt per order.
  await move(o.orderId, 'Underpaid');
  await move(o.orderId, 'Success');
  await eventually(async () => (await outbox(o.orderId)).every((r) => r.state === 'sent'), 'the underpaid notice', 60_000);
  expect(mailsTo(to).filter((x) => x.parsed.subject!.includes('Receipt'))).toHaveLength(1);
});

it('Underpaid: what was received, the exact remainder, the address and the deadline; Expired: what to do', async () => {
  const to = `siti.${Date.now()}@example.id`;
  const short = await order(to, true);
  const [dep] = await gw.app.orm.em.fork().execute<{ address: string }[]>(`select address from deposits where order_id = ?`, [short.orderId]);
  await move(short.orderId, 'Underpaid');
  await eventually(async () => mailsTo(to).length === 1, 'the underpaid notice', 60_000);
  const n = mailsTo(to)[0]!.parsed;
  expect(n.subject).toContain(`Payment for order ${short.orderNo} at Toko Batik Sari is incomplete`);
  expect(n.text).toContain('received 0 USDT of');
  expect(n.text).toMatch(/What to do: send the remaining \d+\.\d+ USDT to the address 0x[0-9a-fA-F]{40} on the Ethereum network before .* UTC/);
  expect(n.text).toContain(dep!.address);

  const late = await order(to, true);
  await move(late.orderId, 'Expired');
  const none = await order(to); // never chose a token
  await move(none.orderId, 'Expired');
  await eventually(async () => mailsTo(to).length === 3, 'two expiry notices', 60_000);
  const lateMail = mailsTo(to).find((x) => x.parsed.subject!.includes(late.orderNo))!.parsed;
  expect(lateMail.subject).toContain('Payment time for order');
  expect(lateMail.text).toContain('If you already sent a payment, there is nothing to do');
  expect(lateMail.text).toContain('To pay, return to Toko Batik Sari and place a new order.');
  const noneMail = mailsTo(to).find((x) => x.parsed.subject!.includes(none.orderNo))!.parsed;
  expect(noneMail.text).not.toContain('If you already sent');
});

it('an order without email queues nothing', async () => {
  const o = await order(null, true);
  await move(o.orderId, 'Success');
  expect(await outbox(o.orderId)).toEqual([]);
});

it('two senders racing send each mail once', async () => {
  const to = `race.${Date.now()}@example.id`;
  // Two more senders beside the gateway's own job, each with its own SMTP transport.
  const senders = [0, 1].map(
    () => new CustomerMailService(gw.app.config, (em, id) => gw.app.checkoutView.state(em, id), smtpTransport(gw.app.config), pino({ level: 'silent' })),
  );
  const orders = await Promise.all([0, 1, 2, 3, 4].map(() => order(to)));
  await Promise.all(orders.map((o) => move(o.orderId, 'Expired')));
  await Promise.all([...senders.map((s) => s.sendDue(gw.app.orm.em.fork())), ...senders.map((s) => s.sendDue(gw.app.orm.em.fork()))]);
  await eventually(async () => mailsTo(to).length >= 5, 'five notices', 60_000);
  // Let any straggler arrive before counting.
  await eventually(async () => (await Promise.all(orders.map((o) => outbox(o.orderId)))).flat().every((r) => r.state === 'sent'), 'all recorded sent', 60_000);
  expect(mailsTo(to)).toHaveLength(5);
  expect(new Set(mailsTo(to).map((x) => x.parsed.messageId)).size).toBe(5);
  await Promise.all(senders.map((s) => s.close()));
});

it('a refused recipient fails at once (550); a stalled SMTP server never holds up the status writer', async () => {
  const bad = `nobody.${Date.now()}@example.id`;
  smtp.refuse.add(bad);
  const o = await order(bad);
  await move(o.orderId, 'Expired');
  await eventually(async () => (await outbox(o.orderId))[0]?.state === 'failed', 'the permanent failure', 60_000);
  expect((await outbox(o.orderId))[0]).toMatchObject({ kind: 'expired', attempts: 1, last_error: expect.stringMatching(/No such mailbox/) });

  const to = `stall.${Date.now()}@example.id`;
  const a = await order(to);
  const stall = smtp.stall();
  try {
    await move(a.orderId, 'Underpaid');
    await eventually(async () => (await outbox(a.orderId))[0]?.state === 'sending', 'the mail in flight', 60_000);
    // The SMTP conversation is stuck in DATA: the same order's next status change commits regardless.
    await move(a.orderId, 'Success');
    expect((await outbox(a.orderId)).map((r) => r.kind)).toEqual(['receipt', 'underpaid']);
  } finally {
    stall.release();
  }
  await eventually(async () => mailsTo(to).length === 2, 'both mails after the stall', 60_000);
});

it('a queue survives a restart, and a dead SMTP server is retried', async () => {
  // Its own database: a gateway without SMTP queues (the trigger) but sends nothing, and stops.
  const db2 = await createTestDatabase();
  try {
    const quiet = await startTestGateway({}, { db: db2 });
    const own = await createMerchant(quiet.app);
    const to = `restart.${Date.now()}@example.id`;
    const orderNo = `MAIL-R-${Date.now()}`;
    const r = await http(quiet.url, `${T}/merchant/fiat/order`, {
      body: { merchant_id: own.merchantId, order_no: orderNo, amount: '150000', email: to },
      headers: { 'api-key': own.sandboxKey },
    });
    expect(r.status).toBe(201);
    const orderId = (r.body.data.key as string).split('_')[1]!;
    await move(orderId, 'Expired', quiet.app);
    await quiet.close();
    const rows = (app: TestGateway['app']) =>
      app.orm.em
        .fork()
        .execute<{ state: string; attempts: number; last_error: string | null }[]>(
          `select state, attempts, last_error from customer_mail_outbox where order_id = ?`,
          [orderId],
        );

    // After the restart, SMTP is configured but its server is down: the attempt fails and is kept for a retry.
    const deadPort = await (async () => {
      const s = await startSmtp();
      const p = s.port;
      await s.close();
      return p;
    })();
    const down = await startTestGateway({ ...smtpEnv(deadPort), SMTP_TIMEOUT_MS: '2000' }, { db: db2 });
    try {
      await eventually(async () => (await rows(down.app))[0]?.attempts === 1 && (await rows(down.app))[0]?.state === 'pending', 'a failed attempt', 60_000);
      expect((await rows(down.app))[0]!.last_error).toMatch(/ECONNREFUSED|connect/i);
    } finally {
      await down.close();
    }
    // And once more with the server up: the notice arrives, once.
    const up = await startTestGateway(smtpEnv(smtp.port), { db: db2 });
    try {
      await up.app.orm.em.fork().execute(`update customer_mail_outbox set next_attempt_at = now() where order_id = ?`, [orderId]);
      await eventually(async () => mailsTo(to).length === 1, 'the queued notice after the restarts', 60_000);
      await eventually(async () => (await rows(up.app))[0]?.state === 'sent', 'recorded sent', 60_000);
      expect(mailsTo(to)[0]!.parsed.subject).toContain(orderNo);
    } finally {
      await up.close();
    }
  } finally {
    await db2.drop();
  }
});
