import { canDepositTransition, DEPOSIT_STATUSES, depositSourcesOf, WATCHED_DEPOSIT_STATUSES } from '../../src/modules/deposits/deposit.transitions.js';
import { canPaymentTransition, PAYMENT_STATUSES, paymentSourcesOf } from '../../src/modules/payments/payment.transitions.js';
import {
  canSweepTransition,
  FINAL_SWEEP_STATUSES,
  SWEEP_STATUSES,
  SWEEP_TRANSITIONS,
  sweepSourcesOf,
  type SweepStatus,
} from '../../src/modules/sweeps/sweep.transitions.js';

/*
 * The deposit and payment transition tables (deposit.transitions.ts, payment.transitions.ts; their
 * headers are the specification). Status writes take their `where status in (…)` guard from
 * `*SourcesOf`, so what is checked here is what the SQL allows.
 */
describe('deposit transitions', () => {
  it.each<[string, string, boolean]>([
    ['open', 'settled', true],
    ['open', 'closed', true],
    ['settled', 'closed', true],
    ['open', 'lapsed', true], // expired unpaid: code back to the merchant's pool, still watched
    ['lapsed', 'settled', true], // a late payment completes the order
    ['lapsed', 'closed', true],
    ['lapsed', 'open', false], // its code may belong to another order already
    ['settled', 'lapsed', false],
    ['settled', 'open', false], // a released unique code may belong to another order already
    ['closed', 'open', false],
    ['closed', 'settled', false],
    ['open', 'open', false],
  ])('%s → %s: %p', (from, to, allowed) => {
    expect(canDepositTransition(from as never, to as never)).toBe(allowed);
  });

  it('guards of the status writes', () => {
    expect(depositSourcesOf('settled')).toEqual(['open', 'lapsed']);
    expect(depositSourcesOf('lapsed')).toEqual(['open']);
    expect(depositSourcesOf('closed')).toEqual(['open', 'lapsed', 'settled']);
    expect(depositSourcesOf('open')).toEqual([]);
  });

  it('closed is final and not watched; every other state is watched', () => {
    expect(DEPOSIT_STATUSES.filter((s) => DEPOSIT_STATUSES.some((to) => canDepositTransition(s, to)))).toEqual(['open', 'lapsed', 'settled']);
    expect(WATCHED_DEPOSIT_STATUSES).toEqual(['open', 'lapsed', 'settled']);
  });
});

describe('payment transitions', () => {
  it.each<[string, string, boolean]>([
    ['pending', 'confirmed', true],
    ['pending', 'orphaned', true],
    ['orphaned', 'pending', true],
    ['confirmed', 'pending', true],
    ['confirmed', 'orphaned', true], // the deep-reorg re-check found its block replaced (stamped reorged_at, alarm raised)
    ['orphaned', 'confirmed', false], // must be seen in a canonical block again first
  ])('%s → %s: %p', (from, to, allowed) => {
    expect(canPaymentTransition(from as never, to as never)).toBe(allowed);
  });

  it('guards of the status writes', () => {
    expect(paymentSourcesOf('confirmed')).toEqual(['pending']);
    expect(paymentSourcesOf('orphaned')).toEqual(['pending', 'confirmed']);
    expect(paymentSourcesOf('pending')).toEqual([...PAYMENT_STATUSES]);
  });
});

describe('sweep transitions', () => {
  it.each<[SweepStatus, SweepStatus, boolean]>([
    ['planned', 'funding', true],
    ['planned', 'funded', true], // fee-payer chains, or gas already there
    ['funding', 'funded', true],
    ['funding', 'planned', true], // the top-up died: plan again
    ['funded', 'sending', true],
    ['sending', 'sent', true],
    ['sending', 'funded', true], // transfer expired before inclusion (dead is certain)
    ['sent', 'confirmed', true],
    ['sent', 'sending', true], // reorg
    ['planned', 'failed', true],
    ['sent', 'failed', true],
    ['planned', 'sending', false], // never send before funding is settled
    ['funding', 'sending', false],
    ['sending', 'confirmed', false], // only through sent (inclusion), then depth
    ['confirmed', 'sending', false], // final: a reorg deeper than the depth is an alarm, not a resend
    ['confirmed', 'failed', false],
    ['failed', 'planned', false],
  ])('%s → %s: %p', (from, to, allowed) => {
    expect(canSweepTransition(from, to)).toBe(allowed);
  });

  it('guards of the status writes', () => {
    expect(sweepSourcesOf('failed')).toEqual(['planned', 'funding', 'funded', 'sending', 'sent']);
    expect(sweepSourcesOf('sending')).toEqual(['funded', 'sent']);
    expect(sweepSourcesOf('confirmed')).toEqual(['sent']);
    expect(sweepSourcesOf('planned')).toEqual(['funding', 'funded']);
  });

  it('confirmed and failed are final; every other status can fail', () => {
    expect(SWEEP_STATUSES.filter((s) => SWEEP_TRANSITIONS[s].length === 0)).toEqual([...FINAL_SWEEP_STATUSES]);
    for (const s of SWEEP_STATUSES.filter((x) => !FINAL_SWEEP_STATUSES.includes(x))) expect(canSweepTransition(s, 'failed')).toBe(true);
  });
});
