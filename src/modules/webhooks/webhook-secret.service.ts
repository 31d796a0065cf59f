import { recordAudit } from '../audit/audit.service.js';
import type { EntityManager } from '@mikro-orm/postgresql';
import { randomBytes, randomUUID } from 'node:crypto';
import { requireFreshAuth } from '../../common/access.js';
import type { RequestContext } from '../../common/context.js';
import type { SecretBox } from '../../common/crypto.js';
import type { Environment } from '../../common/environment.js';
import { parseInput } from '../../common/validation.js';
import { revealSecretInput, rotateSecretInput, type RevealSecretCommand, type RotateSecretCommand } from './webhook.commands.js';
import { SECRET_PREFIX } from './webhook.signer.js';

/** A sealed secret as read with a delivery claim (`webhook_secrets` row). */
export interface SealedSecret {
  id: string;
  c: string;
}

/** What the dashboard sees of an environment's signing secrets. */
export interface WebhookSecretView {
  environment: Environment;
  /** The live secret, in full (`whsec_…`). */
  secret: string;
  createdAt: Date;
  /** When the previous secret stops signing, while a rotation's overlap lasts. */
  previousRetiresAt: Date | null;
}

const aad = (id: string) => `webhook-secret:${id}`;

/**
 * Standard Webhooks signing secrets, one per merchant and environment, sealed under the master key
 * (never stored or logged in the clear). Created on first use; rotation keeps the previous secret
 * signing beside the new one for an overlap the merchant chooses (docs/webhooks.md).
 */
export class WebhookSecretService {
  constructor(private readonly box: SecretBox) {}

  /** Opens secrets read in bulk (newest first), as `whsec_…` strings. */
  open(sealed: readonly SealedSecret[]): string[] {
    return sealed.map((s) => this.box.open(s.c, aad(s.id)).toString('utf8'));
  }

  /**
   * The secrets that sign now (live one first, then any previous one still inside its overlap). Makes
   * the live one when there is none: concurrent callers race on the partial unique index and all read
   * the winner's.
   */
  async signing(em: EntityManager, merchantId: string, environment: Environment): Promise<string[]> {
    await this.ensureLive(em, merchantId, environment);
    return this.open(await this.sealedSigning(em, merchantId, environment));
  }

  /** Dashboard: the live secret of an environment (owners and admins), made on first ask. */
  async reveal(ctx: RequestContext, cmd: RevealSecretCommand): Promise<WebhookSecretView> {
    const merchantId = requireFreshAuth(ctx, 'webhooks.manage', 'see webhook signing secrets').merchantId;
    const { environment } = parseInput(revealSecretInput, cmd);
    await this.ensureLive(ctx.em, merchantId, environment);
    await recordAudit(ctx.em, ctx, 'webhook.signing_secret_viewed', { subject: environment, after: { environment } });
    return this.view(ctx.em, merchantId, environment);
  }

  /**
   * Dashboard: a new live secret; the previous one keeps signing for `overlapHours` (0 retires it now),
   * and any older one still in an earlier overlap retires now: at most two secrets sign at once.
   */
  async rotate(ctx: RequestContext, cmd: RotateSecretCommand): Promise<WebhookSecretView> {
    const merchantId = requireFreshAuth(ctx, 'webhooks.manage', 'rotate webhook signing secrets').merchantId;
    const { environment, overlapHours } = parseInput(rotateSecretInput, cmd);
    await ctx.em.transactional(async (tx) => {
      // Serialises rotations of one merchant's environment (the live row may not exist yet).
      await tx.execute(`select pg_advisory_xact_lock(hashtext('webhook-secret:' || ?::text || ':' || ?::text))`, [merchantId, environment]);
      await tx.execute(`update webhook_secrets set retires_at = now() where merchant_id = ? and environment = ? and retires_at > now()`, [
        merchantId,
        environment,
      ]);
      await tx.execute(
        `update webhook_secrets set retires_at = now() + make_interval(hours => ?) where merchant_id = ? and environment = ? and retires_at is null`,
        [overlapHours, merchantId, environment],
      );
      await this.insertLive(tx, merchantId, environment);
      await recordAudit(tx, ctx, 'webhook.signing_secret_rotated', { subject: environment, after: { environment, overlapHours } });
    });
    return this.view(ctx.em, merchantId, environment);
  }

  private async view(em: EntityManager, merchantId: string, environment: Environment): Promise<WebhookSecretView> {
    const rows = await em.execute<{ id: string; c: string; created_at: Date; retires_at: Date | null }[]>(
      `select id, secret_ciphertext as c, created_at, retires_at from webhook_secrets
        where merchant_id = ? and environment = ? and (retires_at is null or retires_at > now()) order by retires_at is null desc, created_at desc`,
      [merchantId, environment],
    );
    const live = rows.find((r) => r.retires_at === null)!;
    const previous = rows.find((r) => r.retires_at !== null);
    return {
      environment,
      secret: this.open([live])[0]!,
      createdAt: new Date(live.created_at),
      previousRetiresAt: previous ? new Date(previous.retires_at!) : null,
    };
  }

  private sealedSigning(em: EntityManager, merchantId: string, environment: Environment): Promise<SealedSecret[]> {
    return em.execute<SealedSecret[]>(
      `select id, secret_ciphertext as c from webhook_secrets
        where merchant_id = ? and environment = ? and (retires_at is null or retires_at > now()) order by retires_at is null desc, created_at desc`,
      [merchantId, environment],
    );
  }

  private async ensureLive(em: EntityManager, merchantId: string, environment: Environment): Promise<void> {
    const [live] = await em.execute<{ id: string }[]>(`select id from webhook_secrets where merchant_id = ? and environment = ? and retires_at is null`, [
      merchantId,
      environment,
    ]);
    if (!live) await this.insertLive(em, merchantId, environment);
  }

  /** Inserts a new live secret unless one exists (a concurrent first use won: its secret is kept). */
  private async insertLive(em: EntityManager, merchantId: string, environment: Environment): Promise<void> {
    const id = randomUUID();
    const secret = `${SECRET_PREFIX}${randomBytes(32).toString('base64')}`;
    await em.execute(
      `insert into webhook_secrets (id, merchant_id, environment, secret_ciphertext) values (?, ?, ?, ?)
       on conflict (merchant_id, environment) where retires_at is null do nothing`,
      [id, merchantId, environment, this.box.seal(secret, aad(id))],
    );
  }
}
