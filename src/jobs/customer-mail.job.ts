import type { App } from '../app.js';
import { CustomerMailService, smtpTransport } from '../modules/customer-mail/customer-mail.service.js';
import type { JobDefinition } from './scheduler.js';

/**
 * Sends the queued customer mails (receipts and notices) every SMTP_POLL_MS, in the worker. Only
 * scheduled when SMTP_HOST is set. The queue is a table, so mails queued before a restart are sent
 * after it; one transport (one SMTP connection at a time) per worker process.
 */
export function customerMailJob(app: App): JobDefinition | null {
  const transport = smtpTransport(app.config);
  if (!transport) return null;
  const mail = new CustomerMailService(app.config, (em, orderId) => app.checkoutView.state(em, orderId), transport, app.log);
  return {
    name: 'customer-mail',
    every: app.config.SMTP_POLL_MS,
    concurrency: 1,
    ...(app.config.SMTP_POLL_MS < 30_000 && { lockLifetimeMs: Math.max(60_000, app.config.SMTP_TIMEOUT_MS * 4) }),
    handler: async (a, _job, signal) => {
      for (let i = 0; i < 20 && !signal.aborted; i++) {
        const r = await mail.sendDue(a.orm.em.fork(), 50, signal);
        if (r.sent + r.retried + r.failed < 50) break;
      }
    },
  };
}
