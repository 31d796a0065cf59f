import { balanceMatches, ledgerHolds } from '../../src/modules/reconciliation/reconciliation.service';

/** A transfer of `amount` base units in `block`. */
const m = (block: number, amount: bigint, txHash = `t${block}`) => ({ txHash, index: 0, block: BigInt(block), amount });

describe('ledgerHolds: received − swept − fees, the one place of the formula', () => {
  it('is what was received while nothing is swept', () => expect(ledgerHolds(100n)).toBe(100n));
  it('subtracts swept amounts and fees', () => expect(ledgerHolds(100n, 60n, 1n)).toBe(39n));
});

describe('balanceMatches: a balance read at some unknown block of [lo, hi]', () => {
  it('at one block (lo = hi) only the ledger up to that block counts', () => {
    expect(balanceMatches(10n, 10n, [m(6, 5n)], 5n, 5n)).toBe(true);
    expect(balanceMatches(15n, 10n, [m(6, 5n)], 5n, 5n)).toBe(false);
  });
  it('a transfer landing during the reads matches whether the read saw it or not', () => {
    expect(balanceMatches(10n, 10n, [m(7, 5n)], 5n, 8n)).toBe(true); // read before block 7
    expect(balanceMatches(15n, 10n, [m(7, 5n)], 5n, 8n)).toBe(true); // read after it
  });
  it('only prefixes in block order count: a later transfer without an earlier one is not a state the chain had', () => {
    const after = [m(6, 5n), m(7, 3n)];
    expect([10n, 15n, 18n].map((b) => balanceMatches(b, 10n, after, 5n, 8n))).toEqual([true, true, true]);
    expect(balanceMatches(13n, 10n, after, 5n, 8n)).toBe(false);
  });
  it('movements after hi never count; a defect below lo is always a mismatch', () => {
    expect(balanceMatches(15n, 10n, [m(9, 5n)], 5n, 8n)).toBe(false);
    expect(balanceMatches(9n, 10n, [], 5n, 8n)).toBe(false);
    expect(balanceMatches(11n, 10n, [], 5n, 8n)).toBe(false);
  });
});

describe('balanceMatches after sweeps: received − swept', () => {
  const out = (block: number, amount: bigint) => ({ ...m(block, amount, `s${block}`), dir: 'out' as const });
  it('a deposit swept up to lo holds received − swept (0 when all was swept)', () => {
    expect(balanceMatches(0n, 10n, [], 5n, 5n, 10n)).toBe(true);
    expect(balanceMatches(10n, 10n, [], 5n, 5n, 10n)).toBe(false); // the sweep left: 10 still there is a mismatch
    expect(balanceMatches(3n, 13n, [], 5n, 5n, 10n)).toBe(true); // a payment after the sweep
  });
  it('a sweep landing during the reads matches whether the read saw it or not', () => {
    expect(balanceMatches(10n, 10n, [out(7, 10n)], 5n, 8n)).toBe(true);
    expect(balanceMatches(0n, 10n, [out(7, 10n)], 5n, 8n)).toBe(true);
    expect(balanceMatches(5n, 10n, [out(7, 10n)], 5n, 8n)).toBe(false);
  });
  it('a sweep broadcast but not seen in a block yet may or may not have left; nothing else is allowed', () => {
    expect(balanceMatches(10n, 10n, [], 5n, 5n, 0n, [10n])).toBe(true);
    expect(balanceMatches(0n, 10n, [], 5n, 5n, 0n, [10n])).toBe(true);
    expect(balanceMatches(4n, 10n, [], 5n, 5n, 0n, [10n])).toBe(false);
  });
});
