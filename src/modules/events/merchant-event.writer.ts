import type { EntityManager } from '@mikro-orm/postgresql';
import type { Environment } from '../../common/environment.js';
import type { MerchantEventPayloads, MerchantEventType } from './event.catalogue.js';

export interface MerchantEventInput<T extends MerchantEventType> {
  merchantId: string;
  environment: Environment;
  type: T;
  payload: MerchantEventPayloads[T];
  /**
   * Unique per merchant environment and stable for the fact reported (e.g. `sweep.completed:<sweep id>`):
   * recording the same key again is a no-op, and it is the webhook's `X-Service-Idempotency-Key`.
   */
  idempotencyKey: string;
}

/**
 * The one INSERT into `merchant_events`: events of a merchant environment that belong to no order
 * (event.catalogue.ts "Merchant events"). Runs in the caller's transaction, next to the change the
 * event reports, so the event (and its webhook, queued by the table's trigger) exists exactly when
 * that change commits — a rolled-back change sends nothing.
 */
export class MerchantEventWriter {
  /**
   * Records one event in `em`'s open transaction (throws when there is none: an event written outside
   * the change's transaction could outlive a rolled-back change). Returns the event id, or null when an
   * event with this idempotency key was already recorded for the merchant environment (nothing written).
   */
  async record<T extends MerchantEventType>(em: EntityManager, input: MerchantEventInput<T>): Promise<string | null> {
    if (!em.isInTransaction()) throw new Error('MerchantEventWriter.record must run inside the transaction of the change it reports');
    const rows = await em.execute<{ id: string }[]>(
      `insert into merchant_events (id, merchant_id, environment, type, payload, idempotency_key)
       values (gen_random_uuid(), ?, ?, ?, ?::jsonb, ?)
       on conflict (merchant_id, environment, idempotency_key) do nothing
       returning id`,
      [input.merchantId, input.environment, input.type, JSON.stringify(input.payload), input.idempotencyKey],
    );
    return rows[0]?.id ?? null;
  }

  /**
   * Records several events in `em`'s open transaction in ONE insert (a batch of sweeps confirmed
   * together), in input order; keys already recorded are skipped as in `record`. Returns how many
   * were written.
   */
  async recordMany(em: EntityManager, inputs: MerchantEventInput<MerchantEventType>[]): Promise<number> {
    if (!em.isInTransaction()) throw new Error('MerchantEventWriter.recordMany must run inside the transaction of the change it reports');
    if (!inputs.length) return 0;
    const rows = await em.execute<{ id: string }[]>(
      `insert into merchant_events (id, merchant_id, environment, type, payload, idempotency_key)
       select gen_random_uuid(), e.merchant_id, e.environment, e.type, e.payload, e.idempotency_key
       from jsonb_to_recordset(?::jsonb) as e(ord int, merchant_id uuid, environment text, type text, payload jsonb, idempotency_key text)
       order by e.ord
       on conflict (merchant_id, environment, idempotency_key) do nothing
       returning id`,
      [
        JSON.stringify(
          inputs.map((e, ord) => ({
            ord,
            merchant_id: e.merchantId,
            environment: e.environment,
            type: e.type,
            payload: e.payload,
            idempotency_key: e.idempotencyKey,
          })),
        ),
      ],
    );
    return rows.length;
  }
}
