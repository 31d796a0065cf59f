import type { Config } from '../../config/index.js';
import type { SecretBox } from '../../common/crypto.js';
import type { ApiKeyService } from '../merchants/api-key.service.js';
import { WebhookLogService } from './webhook-log.service.js';
import { WebhookOutboxService } from './webhook-outbox.service.js';
import { WebhookQueueService } from './webhook-queue.service.js';
import { WebhookSecretService } from './webhook-secret.service.js';
import { WebhookSettingsService } from './webhook-settings.service.js';
import { RetrySchedule } from './webhook.schedule.js';
import { WebhookSender } from './webhook.sender.js';

/** The webhook services, one per role (the app graph's `webhooks`). */
export interface WebhookServices {
  /** Notification URLs of a merchant, and test events. */
  settings: WebhookSettingsService;
  /** Order events → deliveries. */
  outbox: WebhookOutboxService;
  /** Delivery workers: claim, attempt, record, sweep. */
  queue: WebhookQueueService;
  /** The dashboard's delivery log and redelivery. */
  log: WebhookLogService;
  /** Standard Webhooks signing secrets: reveal and rotation. */
  secrets: WebhookSecretService;
}

export function createWebhookServices(config: Config, apiKeys: ApiKeyService, box: SecretBox): WebhookServices {
  // docs/webhooks.md "Settings and URL rules": private addresses are refused unless WEBHOOK_ALLOW_PRIVATE_URLS=true,
  // in every deployment: a development server reachable by others is as good a pivot as a production one.
  const allowPrivateUrls = config.WEBHOOK_ALLOW_PRIVATE_URLS;
  const sender = new WebhookSender({
    timeoutMs: config.WEBHOOK_TIMEOUT_MS,
    publicOnly: !allowPrivateUrls,
    socketsPerEndpoint: config.WEBHOOK_CONCURRENCY_PER_ENDPOINT,
  });
  const schedule = new RetrySchedule(config.WEBHOOK_RETRY_SCHEDULE_S, config.WEBHOOK_RETRY_JITTER);
  const secrets = new WebhookSecretService(box);
  const queue = new WebhookQueueService(apiKeys, secrets, sender, { timeoutMs: config.WEBHOOK_TIMEOUT_MS, schedule });
  const settings = new WebhookSettingsService(queue, { allowPrivateUrls });
  return { settings, outbox: new WebhookOutboxService(schedule.maxAttempts), queue, log: new WebhookLogService(settings, schedule), secrets };
}
