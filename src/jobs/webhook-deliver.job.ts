import type { App } from '../app.js';
import type { Config } from '../config/index.js';
import { WebhookRunner } from '../modules/webhooks/webhook.runner.js';
import { outboxDispatchJob } from './outbox-dispatch.job.js';
import type { JobDefinition } from './scheduler.js';
import { webhookLeaseRequeueJob } from './webhook-lease-requeue.job.js';

/**
 * Webhook delivery in the worker role: an in-process delivery loop (WebhookRunner, woken by LISTEN
 * after each commit) in every worker, plus two periodic Agenda jobs (outbox drain, lease requeue).
 * The loop is not an Agenda job per delivery: see WebhookRunner for the measured reason.
 */
export function startWebhookDelivery(app: App, databaseUrl: string): WebhookRunner {
  const { config } = app;
  return new WebhookRunner({
    service: app.webhooks,
    em: () => app.orm.em.fork(),
    databaseUrl,
    log: app.log,
    concurrency: config.WEBHOOK_CONCURRENCY,
    perEndpoint: config.WEBHOOK_CONCURRENCY_PER_ENDPOINT,
    pollMs: config.WEBHOOK_POLL_MS,
  });
}

/** The periodic webhook jobs for the worker's scheduler. */
export const webhookJobs = (config: Config): JobDefinition[] => [
  outboxDispatchJob(config.WEBHOOK_SWEEP_INTERVAL_MS),
  webhookLeaseRequeueJob(config.WEBHOOK_SWEEP_INTERVAL_MS),
];
