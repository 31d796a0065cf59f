import { z } from 'zod';
import { pageArgs } from '../../common/cursor.js';
import { offsetPage } from '../../common/validation.js';
import { ENVIRONMENTS, NETWORKS } from '../../common/environment.js';
import { SWEEP_STATUSES } from './sweep.transitions.js';

/* SweepService's commands (merchant-facing), validated once at the service boundary (GraphQL and REST alike). */

const environment = z.enum(ENVIRONMENTS, { message: `must be one of ${ENVIRONMENTS.join(', ')}` });
const network = z.enum(NETWORKS, { message: `must be one of ${NETWORKS.join(', ')}` });

/** Schedule bounds: every 5 minutes at most, every 7 days at least (the table allows 60 s … 30 days; the API is stricter). */
export const SWEEP_INTERVAL_MIN_S = 300;
export const SWEEP_INTERVAL_MAX_S = 7 * 86_400;
/** Most deposits one "sweep now" may name. */
export const SWEEP_NOW_MAX_DEPOSITS = 100;

export const sweepNowInput = z.object({
  environment,
  network: network.optional(),
  depositIds: z
    .array(z.string({ message: 'must be a deposit id (string)' }).uuid('must be a deposit id (UUID)'), { message: 'must be a list of deposit ids' })
    .min(1, 'must name at least one deposit (leave it out to sweep every eligible deposit)')
    .max(SWEEP_NOW_MAX_DEPOSITS, `must name at most ${SWEEP_NOW_MAX_DEPOSITS} deposits`)
    .optional(),
});
export type SweepNowCommand = z.input<typeof sweepNowInput>;

export const sweepBalancesInput = z.object({ environment });
export type SweepBalancesCommand = z.input<typeof sweepBalancesInput>;

/** Most held deposits one read returns (GraphQL always asks for this many; REST `limit` up to it). */
export const SWEEP_HOLDS_MAX = 500;

/** Held deposits (dust rule, minimum): at most `limit`, most recently checked first. */
export const sweepHoldsInput = z.object({
  environment,
  network: network.optional(),
  limit: z.coerce
    .number({ message: 'must be a number' })
    .int('must be a whole number')
    .min(1, 'must be at least 1')
    .max(SWEEP_HOLDS_MAX, `must be at most ${SWEEP_HOLDS_MAX}`)
    .default(100),
});
export type SweepHoldsCommand = z.input<typeof sweepHoldsInput>;

const status = z.enum(SWEEP_STATUSES, { message: `must be one of ${SWEEP_STATUSES.join(', ')}` });

/** GraphQL's connection: newest first, keyset cursor. */
export const pageSweepsInput = z.object({ environment, network: network.optional(), status: status.optional(), ...pageArgs });
export type PageSweepsCommand = z.input<typeof pageSweepsInput>;

// Query strings arrive as text. Out-of-range is refused, not clamped.
export const listSweepsInput = z.object({
  environment,
  network: network.optional(),
  status: status.optional(),
  ...offsetPage,
});
export type ListSweepsCommand = z.input<typeof listSweepsInput>;

export const sweepSettingsInput = z.object({ environment });
export type SweepSettingsCommand = z.input<typeof sweepSettingsInput>;

export const setSweepSettingsInput = z
  .object({
    environment,
    intervalSeconds: z
      .number({ message: 'must be a number of seconds' })
      .int('must be a whole number of seconds')
      .min(SWEEP_INTERVAL_MIN_S, `must be at least ${SWEEP_INTERVAL_MIN_S} (5 minutes)`)
      .max(SWEEP_INTERVAL_MAX_S, `must be at most ${SWEEP_INTERVAL_MAX_S} (7 days)`)
      .optional(),
    enabled: z.boolean({ message: 'must be true or false' }).optional(),
  })
  .refine((c) => c.intervalSeconds !== undefined || c.enabled !== undefined, { message: 'give intervalSeconds or enabled (or both)' });
export type SetSweepSettingsCommand = z.input<typeof setSweepSettingsInput>;
