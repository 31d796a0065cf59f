import {
  amountToSend,
  autoApproves,
  checkRefundAmount,
  feeInToken,
  offerForDeposit,
  offerForReceipt,
  offerLeft,
  refundable,
  refundSource,
  toUnits,
} from '../../src/modules/refunds/refund.rules.js';
import { canRefundTransition, REFUND_STATUSES, REFUND_TRANSITIONS, refundSourcesOf } from '../../src/modules/refunds/refund.transitions.js';

describe('refund rules', () => {
  it('rule 1: what is left = received − refunds that are not cancelled or failed', () => {
    expect(refundable(100n, [])).toBe(100n);
    expect(
      refundable(100n, [
        { amount: 30n, status: 'confirmed' },
        { amount: 20n, status: 'requested' },
        { amount: 50n, status: 'cancelled' },
        { amount: 50n, status: 'failed' },
      ]),
    ).toBe(50n);
    expect(refundable(10n, [{ amount: 10n, status: 'sending' }])).toBe(0n);
  });

  it('rule 1: never more than received; positive amounts only', () => {
    expect(checkRefundAmount(50n, 50n, null)).toBe('ok');
    expect(checkRefundAmount(51n, 50n, null)).toBe('exceeds_received');
    expect(checkRefundAmount(0n, 50n, null)).toBe('not_positive');
    expect(checkRefundAmount(-1n, 50n, null)).toBe('not_positive');
    expect(checkRefundAmount(11n, 50n, 10n)).toBe('exceeds_offer');
    expect(checkRefundAmount(10n, 50n, 10n)).toBe('ok');
    // the excess (10) refunded once already: nothing of the offer is left, though the order received more
    expect(
      offerLeft(10n, 'overpayment_excess', [
        { amount: 10n, status: 'confirmed', kind: 'overpayment_excess' },
        { amount: 5n, status: 'cancelled', kind: 'overpayment_excess' },
      ]),
    ).toBe(0n);
    expect(
      offerLeft(10n, 'overpayment_excess', [
        { amount: 4n, status: 'requested', kind: 'overpayment_excess' },
        { amount: 30n, status: 'confirmed', kind: 'merchant' },
      ]),
    ).toBe(6n);
    expect(checkRefundAmount(1n, 100n, 10n, 0n)).toBe('exceeds_received');
    expect(checkRefundAmount(6n, 100n, 10n, 6n)).toBe('ok');
  });

  it('rule 2: the kinds the gateway offers itself', () => {
    expect(offerForDeposit({ orderStatus: 'Success', due: 100n, confirmed: 130n })).toEqual({ kind: 'overpayment_excess', amount: 30n });
    expect(offerForDeposit({ orderStatus: 'Success', due: 100n, confirmed: 100n })).toBeNull();
    expect(offerForDeposit({ orderStatus: 'Underpaid', due: 100n, confirmed: 40n })).toEqual({ kind: 'partial_payment', amount: 40n });
    expect(offerForDeposit({ orderStatus: 'Expired', due: 100n, confirmed: 0n })).toBeNull();
    expect(offerForDeposit({ orderStatus: 'Processing', due: 100n, confirmed: 40n })).toBeNull();
    expect(offerForReceipt('late')).toBe('late_receipt');
    expect(offerForReceipt('wrong_token')).toBe('wrong_token');
    expect(offerForReceipt('wrong_network')).toBeNull();
    expect(offerForReceipt('native_coin')).toBeNull();
  });

  it('rule 3: auto-approval only for offered kinds at or below the limit', () => {
    expect(autoApproves('overpayment_excess', 5_000_000n, 6, '5')).toBe(true);
    expect(autoApproves('overpayment_excess', 5_000_001n, 6, '5')).toBe(false);
    expect(autoApproves('wrong_token', 1n, 18, null)).toBe(false);
    expect(autoApproves('merchant', 1n, 6, '1000')).toBe(false);
    expect(toUnits('12.5', 6)).toBe(12_500_000n);
    expect(toUnits('0.1234567', 6)).toBe(123_456n);
    expect(() => toUnits('-1', 6)).toThrow();
  });

  it('rule 4: the deducted fee is rounded up; a fee worth the whole amount sends nothing', () => {
    // 0.0002 ETH at 3000 USD = 0.60 USD = 600_000 units of a 6-decimal stablecoin
    expect(feeInToken(200_000_000_000_000n, 18, 3000, 6)).toBe(600_000n);
    expect(feeInToken(1n, 18, 3000, 6)).toBe(1n);
    expect(feeInToken(0n, 18, 3000, 6)).toBe(0n);
    expect(amountToSend(1_000_000n, 'deduct', 600_000n)).toEqual({ send: 400_000n, deducted: 600_000n });
    expect(amountToSend(600_000n, 'deduct', 600_000n)).toBeNull();
    expect(amountToSend(600_000n, 'tank', 600_000n)).toEqual({ send: 600_000n, deducted: 0n });
  });

  it('rule 5: the deposit pays while it holds the amount beyond other reservations, else the refund wallet', () => {
    expect(refundSource({ depositHolds: 100n, reservedByOthers: 0n, amount: 100n, sweepInFlight: false })).toBe('deposit');
    expect(refundSource({ depositHolds: 100n, reservedByOthers: 1n, amount: 100n, sweepInFlight: false })).toBe('refund_wallet');
    expect(refundSource({ depositHolds: 100n, reservedByOthers: 0n, amount: 10n, sweepInFlight: true })).toBe('refund_wallet');
    expect(refundSource({ depositHolds: 0n, reservedByOthers: 0n, amount: 10n, sweepInFlight: false })).toBe('refund_wallet');
  });
});

describe('refund transitions', () => {
  it('final statuses go nowhere; the happy path and the way back from a dead transfer exist', () => {
    for (const s of ['confirmed', 'cancelled', 'failed'] as const) expect(REFUND_TRANSITIONS[s]).toEqual([]);
    expect(canRefundTransition('requested', 'claimed')).toBe(true);
    expect(canRefundTransition('claimed', 'approved')).toBe(true);
    expect(canRefundTransition('approved', 'sending')).toBe(true);
    expect(canRefundTransition('sending', 'confirmed')).toBe(true);
    expect(canRefundTransition('sending', 'approved')).toBe(true);
    expect(canRefundTransition('sending', 'cancelled')).toBe(false);
    expect(canRefundTransition('confirmed', 'sending')).toBe(false);
  });

  it('sources of a move come from the table', () => {
    expect(refundSourcesOf('cancelled').sort()).toEqual(['approved', 'claimed', 'requested']);
    expect(refundSourcesOf('failed').sort()).toEqual(['approved', 'claimed', 'requested', 'sending']);
    expect(REFUND_STATUSES.every((s) => REFUND_TRANSITIONS[s].every((t) => REFUND_STATUSES.includes(t)))).toBe(true);
  });
});
