import { randomUUID } from 'node:crypto';
import type { RequestContext } from '../../src/common/context';
import type { AttemptRecord, ClaimedDelivery } from '../../src/modules/webhooks/webhook-queue.service';
import {
  WEBHOOK_DELIVERY_INITIAL_STATES,
  WEBHOOK_DELIVERY_MOVES,
  WEBHOOK_DELIVERY_STATES,
  WEBHOOK_DELIVERY_TRANSITIONS,
  type WebhookDeliveryState,
} from '../../src/modules/webhooks/webhook.transitions';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { WebhookReceiver } from '../support/webhook-receiver';
import { FAST_WEBHOOKS, newOrder, setUrl, transition } from '../support/webhooks';

/**
 * The delivery transition table checked against the code: every operation that writes a delivery's
 * state (claim, record, lease requeue, redelivery, clearing the URL, …) is run, through the real services and
 * SQL, on a delivery in each state. Every move observed must be in the table, and every move in the
 * table must be made by some operation — so neither the code nor the table can drift alone.
 */
let gw: TestGateway;
let r: WebhookReceiver;
let merchantId: string;

beforeAll(async () => {
  // API role: no delivery loop or lease requeue job runs, so only this test moves deliveries.
  gw = await startTestGateway({ ...FAST_WEBHOOKS, ROLE: 'api' });
  r = await WebhookReceiver.start();
  merchantId = (await createMerchant(gw.app)).merchantId;
  await setUrl(gw.app, merchantId, 'sandbox', r.url);
});
afterAll(async () => {
  await gw?.close();
  await r?.close();
});

const em = () => gw.app.orm.em.fork();
const dashboard = (): RequestContext => ({
  em: em(),
  caller: { kind: 'dashboard', userId: randomUUID(), merchantId, sessionId: randomUUID(), role: 'owner' },
  environment: null,
  ip: '127.0.0.1',
  requestId: randomUUID(),
});

interface Row {
  id: string;
  state: WebhookDeliveryState;
  token: string;
  attempts: number;
}

/** A delivery in `state`, as the services leave it there: `sending` rows hold an expired lease with a known token. */
async function deliveryIn(state: WebhookDeliveryState, opts: { lastAttempt?: boolean } = {}): Promise<Row> {
  const id = randomUUID();
  const token = randomUUID();
  const attempts = state === 'pending' ? 0 : opts.lastAttempt ? 3 : 1;
  await em().execute(
    `insert into webhook_deliveries (id, merchant_id, environment, event, idempotency_key, url, endpoint, payload, max_attempts, state, attempts, next_attempt_at, locked_at, locked_until, lock_token)
     values (?, ?, 'sandbox', 'webhook.test', ?, ?, ?, '{}', 3, ?, ?, now() - interval '1 second', ${state === 'sending' ? `now() - interval '1 minute', now() - interval '1 second', ?` : 'null, null, ?::uuid'})`,
    [id, merchantId, `evt_${id}`, r.url, new URL(r.url).origin, state, attempts, state === 'sending' ? token : null],
  );
  return { id, state, token, attempts };
}

const stateOf = async (id: string): Promise<WebhookDeliveryState> =>
  (await em().execute<{ state: WebhookDeliveryState }[]>(`select state from webhook_deliveries where id = ?`, [id]))[0]!.state;

const recordOf = (row: Row, outcome: AttemptRecord['outcome']): AttemptRecord => {
  const delivery: ClaimedDelivery = {
    id: row.id,
    merchantId,
    environment: 'sandbox',
    kind: 'webhook.test',
    idempotencyKey: `evt_${row.id}`,
    url: r.url,
    endpoint: new URL(r.url).origin,
    payload: '{}',
    series: 1,
    attempt: row.attempts,
    maxAttempts: 3,
    lockToken: row.token,
    secrets: [],
    signingKey: null,
  };
  const status = outcome === 'delivered' ? 200 : outcome === 'retry' ? 503 : 400;
  return {
    delivery,
    outcome,
    delayMs: outcome === 'retry' ? 1000 : null,
    response: { status, error: null, retryAfterS: null, responseBody: null, startedAt: new Date(), latencyMs: 1 },
  };
};

/** Each operation that can write a delivery's state, run on one delivery. Refusals (CONFLICT) are part of the behaviour. */
const OPERATIONS: Record<string, { lastAttempt?: boolean; run: (row: Row) => Promise<unknown> }> = {
  claim: { run: () => gw.app.webhooks.queue.claim(em(), { limit: 1000, perEndpoint: 1000, inflight: {} }) },
  'record delivered': { run: (row) => gw.app.webhooks.queue.record(em(), [recordOf(row, 'delivered')]) },
  'record retry': { run: (row) => gw.app.webhooks.queue.record(em(), [recordOf(row, 'retry')]) },
  'record failed': { run: (row) => gw.app.webhooks.queue.record(em(), [recordOf(row, 'failed')]) },
  'lease requeue (attempts left)': { run: () => gw.app.webhooks.queue.requeueExpiredLeases(em()) },
  'lease requeue (last attempt)': { lastAttempt: true, run: () => gw.app.webhooks.queue.requeueExpiredLeases(em()) },
  redeliver: { run: (row) => gw.app.webhooks.log.redeliver(dashboard(), { id: row.id }).catch((e: { code?: string }) => expect(e.code).toBe('CONFLICT')) },
  're-point the URL': { run: () => setUrl(gw.app, merchantId, 'sandbox', r.url) },
  'clear the URL': {
    run: async () => {
      await setUrl(gw.app, merchantId, 'sandbox', null);
      await setUrl(gw.app, merchantId, 'sandbox', r.url);
    },
  },
};

describe('every status write of a delivery is a move of the transition table', () => {
  const observed = new Map<string, Set<string>>();

  it.each(Object.keys(OPERATIONS))('%s, from every state', async (name) => {
    const op = OPERATIONS[name]!;
    for (const from of WEBHOOK_DELIVERY_STATES) {
      const row = await deliveryIn(from, { lastAttempt: op.lastAttempt });
      await op.run(row);
      const to = await stateOf(row.id);
      if (to === from) continue;
      expect({ operation: name, move: `${from} → ${to}`, allowed: WEBHOOK_DELIVERY_TRANSITIONS[from].includes(to) }).toEqual({
        operation: name,
        move: `${from} → ${to}`,
        allowed: true,
      });
      const key = `${from} → ${to}`;
      observed.set(key, (observed.get(key) ?? new Set()).add(name));
    }
  });

  it('the record of a stale lease (another token) moves nothing', async () => {
    const row = await deliveryIn('sending');
    const lost = await gw.app.webhooks.queue.record(em(), [recordOf({ ...row, token: randomUUID() }, 'delivered')]);
    expect(lost).toEqual([row.id]);
    expect(await stateOf(row.id)).toBe('sending');
  });

  it('every move in the table is made by some operation (none is dead, none is missing from the code)', () => {
    const table = WEBHOOK_DELIVERY_MOVES.map((m) => `${m.from} → ${m.to}`);
    expect([...observed.keys()].sort()).toEqual([...new Set(table)].sort());
    // The drifted move, now in the table and made only by clearing the URL.
    expect([...observed.get('pending → failed')!]).toEqual(['clear the URL']);
    // A delivered webhook is sent again only through an explicit redelivery.
    expect([...observed.get('delivered → pending')!]).toEqual(['redeliver']);
  });
});

describe('deliveries are born only in the table’s initial states', () => {
  const born = WEBHOOK_DELIVERY_INITIAL_STATES.map((i) => i.state).sort();

  it('the outbox step inserts pending; a test send inserts sending (its own claim)', async () => {
    const order = await newOrder(gw.app, merchantId);
    await transition(gw.app, order.id, 'Expired');
    await gw.app.webhooks.outbox.dispatchOutbox(em());
    const fromOutbox = await em().execute<{ state: string }[]>(`select state from webhook_deliveries where order_id = ?`, [order.id]);
    const claimed = await gw.app.webhooks.queue.insertClaimed(em(), {
      id: randomUUID(),
      merchantId,
      environment: 'sandbox',
      kind: 'webhook.test',
      idempotencyKey: `evt_${randomUUID()}`,
      url: r.url,
      payload: '{}',
    });
    expect([fromOutbox[0]!.state, await stateOf(claimed.id)].sort()).toEqual(born);
  });
});
