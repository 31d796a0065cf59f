import type { EntityManager } from '@mikro-orm/postgresql';
import { randomUUID } from 'node:crypto';
import nodemailer, { type Transporter } from 'nodemailer';
import type { Logger } from 'pino';
import type { CheckoutState } from '../checkout/checkout-view.service.js';
import { customerMail, type CustomerMailKind } from '../../checkout/receipt.content.js';
import type { Config } from '../../config/config.js';

/** How a customer mail is sent: nodemailer's SMTP transport in production, any transport in tests. */
export type MailTransport = Pick<Transporter, 'sendMail' | 'close'>;

/** The operator's SMTP settings as a nodemailer transport (null when SMTP_HOST is unset: no mail). */
export function smtpTransport(config: Config): MailTransport | null {
  if (!config.SMTP_HOST) return null;
  return nodemailer.createTransport({
    host: config.SMTP_HOST,
    port: config.SMTP_PORT,
    secure: config.SMTP_SECURE,
    requireTLS: config.SMTP_REQUIRE_TLS,
    ...(config.SMTP_USER && { auth: { user: config.SMTP_USER, pass: config.SMTP_PASSWORD ?? '' } }),
    connectionTimeout: config.SMTP_TIMEOUT_MS,
    greetingTimeout: config.SMTP_TIMEOUT_MS,
    socketTimeout: config.SMTP_TIMEOUT_MS,
    // Never log message bodies (they carry customers' addresses and orders).
    logger: false,
  });
}

interface Claimed {
  id: string;
  order_id: string;
  kind: CustomerMailKind;
  attempts: number;
  lock_token: string;
  email: string | null;
  environment: string;
}

export interface SendRound {
  sent: number;
  retried: number;
  failed: number;
}

/** SMTP replies 5xx are permanent (bad address, refused sender): retrying cannot help. */
const permanent = (e: unknown) => typeof (e as { responseCode?: unknown }).responseCode === 'number' && (e as { responseCode: number }).responseCode >= 500;

/**
 * Sends the queued customer mails (customer_mail_outbox, filled by a trigger when an order with an
 * email reaches Success, Underpaid or Expired). One round: claim a batch of due rows (fair per
 * merchant: the batch takes each merchant's oldest first, round-robin), send each over SMTP outside
 * any transaction, record the outcome under the claim's token. This method is idempotent and safe to
 * run in several workers at once: a claimed row is in flight in one worker only, and a sent row is
 * never claimed again.
 */
export class CustomerMailService {
  constructor(
    private readonly config: Config,
    private readonly render: (em: EntityManager, orderId: string) => Promise<CheckoutState>,
    private readonly transport: MailTransport | null,
    private readonly log: Logger,
  ) {}

  get enabled(): boolean {
    return this.transport !== null;
  }

  /** `signal`: a stopping worker sends no more of its batch and hands the unsent rows back at once. */
  async sendDue(em: EntityManager, batch = 50, signal?: AbortSignal): Promise<SendRound> {
    const round: SendRound = { sent: 0, retried: 0, failed: 0 };
    if (!this.transport) return round;
    // Too old to be useful (a queue left while SMTP was off): failed, with the reason, not sent.
    await em.execute(
      `update customer_mail_outbox set state = 'failed', last_error = 'older than SMTP_MAX_AGE_S', locked_until = null, lock_token = null
       where state in ('pending','sending') and created_at < now() - make_interval(secs => ?) and (state = 'pending' or locked_until < now())`,
      [this.config.SMTP_MAX_AGE_S],
    );
    const token = randomUUID();
    const leaseS = Math.ceil((this.config.SMTP_TIMEOUT_MS * 4) / 1000);
    const claimed = await em.execute<Claimed[]>(
      `with due as (
         select id, merchant_id, next_attempt_at from customer_mail_outbox
         where (state = 'pending' and next_attempt_at <= now()) or (state = 'sending' and locked_until < now())
         order by next_attempt_at limit ?
       ), ranked as (
         select id from (select id, row_number() over (partition by merchant_id order by next_attempt_at) as rn, next_attempt_at from due) r
         order by rn, next_attempt_at limit ?
       ), locked as (
         select c.id from customer_mail_outbox c join ranked using (id)
         where (c.state = 'pending' and c.next_attempt_at <= now()) or (c.state = 'sending' and c.locked_until < now())
         for update of c skip locked
       )
       update customer_mail_outbox c set state = 'sending', attempts = c.attempts + 1, lock_token = ?::uuid, locked_until = now() + make_interval(secs => ?)
       from locked, orders o where c.id = locked.id and o.id = c.order_id
       returning c.id, c.order_id, c.kind, c.attempts, c.lock_token, o.customer_email as email, o.environment`,
      [batch * 10, batch, token, leaseS],
    );
    for (const [i, row] of claimed.entries()) {
      if (signal?.aborted) {
        const rest = claimed.slice(i);
        await em.execute(
          `update customer_mail_outbox set state = 'pending', attempts = attempts - 1, locked_until = null, lock_token = null where id = any(?::uuid[]) and lock_token = ?::uuid`,
          [`{${rest.map((r) => r.id).join(',')}}`, token],
        );
        break;
      }
      const outcome = await this.sendOne(em, row);
      round[outcome] += 1;
    }
    return round;
  }

  private async sendOne(em: EntityManager, row: Claimed): Promise<keyof SendRound> {
    try {
      if (!row.email) throw Object.assign(new Error('the order has no email'), { responseCode: 550 });
      const mail = customerMail(row.kind, await this.render(em.fork(), row.order_id));
      const host = new URL(this.config.PUBLIC_BASE_URL).hostname || 'gateway.invalid';
      await this.transport!.sendMail({
        from: this.config.SMTP_FROM,
        to: row.email,
        subject: row.environment === 'sandbox' ? `[Sandbox] ${mail.subject}` : mail.subject,
        text: mail.text,
        html: mail.html,
        // One Message-ID per queued mail: a retry after a crash mid-send is recognisably the same message.
        messageId: `<${row.id}.${row.kind}@${host}>`,
        headers: { 'Auto-Submitted': 'auto-generated' },
      });
    } catch (e) {
      const message = e instanceof Error ? e.message.slice(0, 500) : String(e);
      const final = permanent(e) || row.attempts >= this.config.SMTP_MAX_ATTEMPTS;
      const waitS = Math.min(3600, 30 * 2 ** (row.attempts - 1));
      await em.execute(
        `update customer_mail_outbox set state = ?, last_error = ?, next_attempt_at = now() + make_interval(secs => ?), locked_until = null, lock_token = null
         where id = ? and lock_token = ?::uuid`,
        [final ? 'failed' : 'pending', message, waitS, row.id, row.lock_token],
      );
      this.log.warn({ mailId: row.id, orderId: row.order_id, kind: row.kind, attempt: row.attempts, final, err: message }, 'customer mail not sent');
      return final ? 'failed' : 'retried';
    }
    await em.execute(
      `update customer_mail_outbox set state = 'sent', sent_at = now(), last_error = null, locked_until = null, lock_token = null where id = ? and lock_token = ?::uuid`,
      [row.id, row.lock_token],
    );
    this.log.info({ mailId: row.id, orderId: row.order_id, kind: row.kind }, 'customer mail sent');
    return 'sent';
  }

  async close(): Promise<void> {
    this.transport?.close();
  }
}
