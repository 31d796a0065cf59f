import { recordAudit, type AuditSource } from '../audit/audit.service.js';
import { requireFreshAuth, requirePermission } from '../../common/access.js';
import type { EntityManager } from '@mikro-orm/postgresql';
import { randomUUID } from 'node:crypto';
import type { RequestContext } from '../../common/context.js';
import type { Environment } from '../../common/environment.js';
import { DomainError } from '../../common/errors.js';
import { parseInput } from '../../common/validation.js';
import { Merchant } from '../merchants/merchant.entity.js';
import { assertPublicHost, SsrfError, urlHost } from './ssrf.js';
import { sendTestInput, setNotificationUrlInput, type SendTestCommand, type SetNotificationUrlCommand } from './webhook.commands.js';
import { deliveryViews, type WebhookDeliveryView } from './webhook-delivery.view.js';
import { buildTestBody } from './webhook.payload.js';
import type { WebhookQueueService } from './webhook-queue.service.js';
import { endpointOf } from './webhook.sql.js';
import { deliveryMove } from './webhook.transitions.js';

export interface WebhookSettingsOptions {
  /** WEBHOOK_ALLOW_PRIVATE_URLS: false → URLs must resolve to public addresses (save and send). */
  allowPrivateUrls: boolean;
}

const URL_REMOVED = deliveryMove(['pending'], 'failed');

/**
 * A merchant's webhook settings: the notification URL of each environment (validated, SSRF-checked),
 * and the signed test event sent to it on demand.
 */
export class WebhookSettingsService {
  constructor(
    private readonly queue: WebhookQueueService,
    private readonly opts: WebhookSettingsOptions,
  ) {}

  /**
   * Validates a notification URL for an environment: absolute http(s), https in production, no
   * credentials or fragment, and (unless private URLs are allowed) every address the host resolves
   * to is public. Returns the normalised URL.
   */
  async checkUrl(environment: Environment, raw: string): Promise<string> {
    const reject = (why: string): never => {
      throw new DomainError('NOTIFICATION_URL_REJECTED', `notification_url ${why}`);
    };
    const url = URL.canParse(raw) ? new URL(raw) : reject('must be an absolute http(s) URL');
    if (url.protocol !== 'https:' && url.protocol !== 'http:') reject('must be an http(s) URL');
    if (environment === 'production' && url.protocol !== 'https:') reject('must use https in production');
    if (url.username || url.password) reject('must not contain credentials');
    if (url.hash) reject('must not contain a fragment');
    if (!this.opts.allowPrivateUrls) {
      try {
        await assertPublicHost(urlHost(url));
      } catch (e) {
        // A developer's local receiver lands here: say which switch allows it.
        if (e instanceof SsrfError)
          reject(`refused: ${e.message}; a receiver on a private or local address needs WEBHOOK_ALLOW_PRIVATE_URLS=true on the gateway (development only)`);
        throw e;
      }
    }
    return url.toString();
  }

  /** Dashboard: sets or clears the URL of the caller's merchant (owners and admins only). */
  async setNotificationUrl(ctx: RequestContext, cmd: SetNotificationUrlCommand): Promise<Merchant> {
    const merchantId = requireFreshAuth(ctx, 'webhooks.manage', 'change webhooks').merchantId;
    return this.setForMerchant(ctx.em, merchantId, cmd, ctx);
  }

  /**
   * Operator (CLI) and internal path, no caller to check: sets or clears (null / "") the URL of one
   * environment. Pending deliveries follow the new URL; clearing it fails them (nothing is sent to a
   * URL the merchant removed). `audit`: who, for the audit trail (the dashboard's context, or the CLI's).
   */
  async setForMerchant(em: EntityManager, merchantId: string, cmd: SetNotificationUrlCommand, audit: AuditSource): Promise<Merchant> {
    const data = parseInput(setNotificationUrlInput, cmd);
    const url = data.url ? await this.checkUrl(data.environment, data.url) : null;
    return em.transactional(async (tx) => {
      const merchant = await tx.findOne(Merchant, merchantId);
      if (!merchant) throw new DomainError('MERCHANT_NOT_FOUND', 'Merchant not found');
      const before = data.environment === 'production' ? merchant.notificationUrlProduction : merchant.notificationUrlSandbox;
      if (data.environment === 'production') merchant.notificationUrlProduction = url;
      else merchant.notificationUrlSandbox = url;
      await tx.flush();
      await recordAudit(tx, audit, 'webhook.notification_url_changed', { merchantId, subject: data.environment, before: { url: before }, after: { url } });
      if (url) {
        await tx.execute(
          `update webhook_deliveries set url = ?, endpoint = ?, updated_at = now() where merchant_id = ? and environment = ? and state = 'pending'`,
          [url, endpointOf(url), merchantId, data.environment],
        );
      } else {
        await tx.execute(
          `update webhook_deliveries set ${URL_REMOVED.set}, failed_at = now(), last_error = 'notification_url was removed', updated_at = now()
           where merchant_id = ? and environment = ? and ${URL_REMOVED.where}`,
          [merchantId, data.environment],
        );
      }
      return merchant;
    });
  }

  /** The URL deliveries of an environment go to now; NOTIFICATION_URL_REJECTED when none is set. */
  async currentUrl(em: EntityManager, merchantId: string, environment: Environment): Promise<string> {
    const m = await em.findOne(Merchant, merchantId);
    const url = environment === 'production' ? m?.notificationUrlProduction : m?.notificationUrlSandbox;
    if (!url) throw new DomainError('NOTIFICATION_URL_REJECTED', `No notification_url is set for ${environment}`);
    return url;
  }

  /**
   * Sends a signed `webhook.test` event to the environment's URL now, from this process, and returns
   * the delivery with its attempt. One attempt, no retries (redeliverWebhook repeats it).
   */
  async sendTest(ctx: RequestContext, cmd: SendTestCommand): Promise<WebhookDeliveryView> {
    const merchantId = requirePermission(ctx, 'webhooks.manage').merchantId;
    const { environment } = parseInput(sendTestInput, cmd);
    const url = await this.currentUrl(ctx.em, merchantId, environment);
    const id = randomUUID();
    const body = buildTestBody(id, merchantId, environment, new Date());
    const claimed = await this.queue.insertClaimed(ctx.em, {
      id,
      merchantId,
      environment,
      kind: body.event,
      idempotencyKey: body.idempotency_key,
      url,
      payload: JSON.stringify(body),
    });
    await this.queue.record(ctx.em, [await this.queue.attempt(claimed)]);
    await recordAudit(ctx.em, ctx, 'webhook.test_sent', { subject: environment, after: { environment, url, deliveryId: id } });
    const [view] = await deliveryViews(ctx.em, 'w.id = ?', [id]);
    return view!;
  }
}
