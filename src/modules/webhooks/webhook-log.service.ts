import { recordAudit } from '../audit/audit.service.js';
import { requirePermission } from '../../common/access.js';
import type { RequestContext } from '../../common/context.js';
import { DomainError } from '../../common/errors.js';
import { parseInput } from '../../common/validation.js';
import { deliveryViews, type WebhookDeliveryView } from './webhook-delivery.view.js';
import type { WebhookSettingsService } from './webhook-settings.service.js';
import { deliveryRefInput, listDeliveriesInput, type DeliveryRefCommand, type ListDeliveriesCommand } from './webhook.commands.js';
import type { RetrySchedule } from './webhook.schedule.js';
import { endpointOf, notifyDeliveries } from './webhook.sql.js';
import { deliveryMove } from './webhook.transitions.js';

const REDELIVER = deliveryMove(['delivered', 'failed'], 'pending');

/**
 * The dashboard's delivery log: every delivery of the caller's merchant with its attempts, and
 * redelivery (the only way a delivered webhook is ever sent again).
 */
export class WebhookLogService {
  constructor(
    private readonly settings: WebhookSettingsService,
    private readonly schedule: RetrySchedule,
  ) {}

  /** The delivery log of the caller's merchant, newest first, with every attempt; keyset pagination; the total of the filtered rows only when called. */
  async list(
    ctx: RequestContext,
    cmd: ListDeliveriesCommand,
  ): Promise<{ deliveries: WebhookDeliveryView[]; nextCursor: string | null; totalCount: () => Promise<number> }> {
    const merchantId = requirePermission(ctx, 'webhooks.read').merchantId;
    const f = parseInput(listDeliveriesInput, cmd);
    const where = ['w.merchant_id = ?', 'w.environment = ?'];
    const params: unknown[] = [merchantId, f.environment];
    const filter = (sql: string, value: unknown) => {
      where.push(sql);
      params.push(value);
    };
    if (f.state) filter('w.state = ?', f.state);
    if (f.event) filter('w.event = ?', f.event);
    if (f.orderNo) filter('o.order_no = ?', f.orderNo);
    const counted = { where: [...where], params: [...params] };
    const totalCount = async () => {
      const [c] = await ctx.em.execute<{ n: string }[]>(
        `select count(*) as n from webhook_deliveries w left join orders o on o.id = w.order_id where ${counted.where.join(' and ')}`,
        counted.params,
      );
      return Number(c?.n ?? 0);
    };
    if (f.after) {
      const c = decodeCursor(f.after);
      // Microseconds, exactly: a millisecond cursor would skip rows created within the same millisecond.
      where.push(`(w.created_at, w.id) < (timestamptz 'epoch' + ? * interval '1 microsecond', ?)`);
      params.push(c.createdUs, c.id);
    }
    const rows = await deliveryViews(ctx.em, `${where.join(' and ')} order by w.created_at desc, w.id desc limit ${f.first + 1}`, params);
    const page = rows.slice(0, f.first);
    const last = page[page.length - 1];
    return { deliveries: page, nextCursor: rows.length > f.first && last ? last.cursor : null, totalCount };
  }

  async get(ctx: RequestContext, cmd: DeliveryRefCommand): Promise<WebhookDeliveryView> {
    const merchantId = requirePermission(ctx, 'webhooks.read').merchantId;
    const { id } = parseInput(deliveryRefInput, cmd);
    return this.view(ctx, merchantId, id);
  }

  /**
   * Starts a new attempt series for a delivered or failed delivery (`→ pending`, due now): the same body
   * and idempotency key, to the merchant's current URL, signed with the current key when sent. The only
   * way a delivered webhook is ever sent again. A delivery still queued or in flight is left alone.
   */
  async redeliver(ctx: RequestContext, cmd: DeliveryRefCommand): Promise<WebhookDeliveryView> {
    const merchantId = requirePermission(ctx, 'webhooks.manage').merchantId;
    const { id } = parseInput(deliveryRefInput, cmd);
    const current = await this.view(ctx, merchantId, id);
    const url = await this.settings.currentUrl(ctx.em, merchantId, current.environment);
    const moved = await ctx.em.transactional(async (tx) => {
      const rows = await tx.execute<{ id: string }[]>(
        `update webhook_deliveries set ${REDELIVER.set}, series = series + 1, attempts = 0,
           max_attempts = case when event = 'webhook.test' then 1 else ? end,
           next_attempt_at = now(), url = ?, endpoint = ?, last_error = null, last_status = null, failed_at = null, updated_at = now()
         where id = ? and merchant_id = ? and ${REDELIVER.where} returning id`,
        [this.schedule.maxAttempts, url, endpointOf(url), id, merchantId],
      );
      if (!rows.length) return null;
      await notifyDeliveries(tx);
      await recordAudit(tx, ctx, 'webhook.redelivered', { subject: id, after: { deliveryId: id, url } });
      // Read inside the transaction: once it commits, the NOTIFY lets a worker claim the delivery at
      // once, and the answer must show the new series as queued, not as the worker's first attempt.
      return this.view({ ...ctx, em: tx }, merchantId, id);
    });
    if (!moved) throw new DomainError('CONFLICT', 'This delivery is already queued or being sent');
    return moved;
  }

  /** One delivery of the merchant; another merchant's id is "not found", like an unknown one. */
  private async view(ctx: RequestContext, merchantId: string, id: string): Promise<WebhookDeliveryView> {
    const [view] = await deliveryViews(ctx.em, 'w.id = ? and w.merchant_id = ?', [id, merchantId]);
    if (!view) throw new DomainError('WEBHOOK_DELIVERY_NOT_FOUND', 'Webhook delivery not found');
    return view;
  }
}

/** Page cursor: `<created_at in epoch microseconds>|<id>` (base64url). */
function decodeCursor(s: string): { createdUs: string; id: string } {
  const [createdUs, id] = Buffer.from(s, 'base64url').toString('utf8').split('|');
  if (!id || !createdUs || !/^\d{1,20}$/.test(createdUs) || !/^[0-9a-f-]{36}$/.test(id)) throw new DomainError('VALIDATION_FAILED', 'Invalid cursor');
  return { createdUs, id };
}
