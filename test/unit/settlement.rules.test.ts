import { decideSettlement, type DepositReceipts, type SettlementInput } from '../../src/modules/payments/settlement.rules.js';

/*
 * Table-driven cases of settlement.rules.ts (its header is the specification). One order of
 * 1 000 000 base units due on one deposit, expiring at 12:00:00, with a one-hour late window
 * (lateEnd 13:00:00). `now` before / after expiry / after lateEnd: 11:00, 12:30, 13:30.
 */
const EXPIRES = new Date('2026-11-23T12:00:00Z');
const BEFORE = new Date('2026-11-23T11:00:00Z');
const LATE = new Date('2026-11-23T12:30:00Z');
const AFTER = new Date('2026-11-23T13:30:00Z');
const DUE = 1_000_000n;

const dep = (r: Partial<DepositReceipts> = {}): DepositReceipts => ({ id: 'd1', due: DUE, confirmed: 0n, pending: 0n, inWindow: r.confirmed ?? 0n, ...r });
const input = (over: Partial<SettlementInput>): SettlementInput => ({
  status: 'Created',
  expiresAt: EXPIRES,
  overpaid: false,
  deposits: [dep()],
  toleranceBps: 0,
  now: BEFORE,
  lateWindowS: 3600,
  ...over,
});

describe('decideSettlement — target status (rule 5) and transition (table)', () => {
  it.each<[string, Partial<SettlementInput>, string, boolean]>([
    ['nothing received, before expiry', {}, 'Created', false],
    ['a payment pending, before expiry', { deposits: [dep({ pending: DUE })] }, 'Processing', true],
    ['a payment pending, after expiry (waits for finality, not expired yet)', { now: LATE, deposits: [dep({ pending: DUE })] }, 'Processing', true],
    ['exact total confirmed', { deposits: [dep({ confirmed: DUE })] }, 'Success', true],
    ['one unit short, no tolerance, before expiry: detected, not final → Processing', { deposits: [dep({ confirmed: DUE - 1n })] }, 'Processing', true],
    [
      'Processing with a confirmed partial stays Processing (never back to Created)',
      { status: 'Processing', deposits: [dep({ confirmed: 5n })] },
      'Processing',
      false,
    ],
    [
      'Processing, a confirmed partial and its pending top-up orphaned: stays Processing',
      { status: 'Processing', deposits: [dep({ confirmed: DUE / 2n })] },
      'Processing',
      false,
    ],
    ['one unit short at expiry', { now: LATE, deposits: [dep({ confirmed: DUE - 1n })] }, 'Underpaid', true],
    ['nothing at expiry', { now: LATE }, 'Expired', true],
    ['Processing whose pending payment was orphaned, before expiry', { status: 'Processing' }, 'Created', true],
    ['Processing, orphaned, after expiry', { status: 'Processing', now: LATE }, 'Expired', true],
    ['Expired, then a partial payment inside the late window', { status: 'Expired', now: LATE, deposits: [dep({ confirmed: 5n })] }, 'Underpaid', true],
    ['Expired, then a partial payment after the late window', { status: 'Expired', now: AFTER, deposits: [dep({ confirmed: 5n })] }, 'Expired', false],
    ['Expired, then the full total inside the late window', { status: 'Expired', now: LATE, deposits: [dep({ confirmed: DUE })] }, 'Success', true],
    ['Underpaid, then a top-up completes it', { status: 'Underpaid', now: LATE, deposits: [dep({ confirmed: DUE })] }, 'Success', true],
    ['Underpaid, a top-up still short', { status: 'Underpaid', now: LATE, deposits: [dep({ confirmed: DUE - 1n })] }, 'Underpaid', false],
    [
      'Underpaid with a payment pending stays Underpaid',
      { status: 'Underpaid', now: LATE, deposits: [dep({ confirmed: 5n, pending: DUE })] },
      'Underpaid',
      false,
    ],
    ['Success stays Success when its payment is later orphaned (never goes back)', { status: 'Success', deposits: [dep()] }, 'Success', false],
    [
      'confirmed in full but detected after lateEnd does not complete it',
      { status: 'Expired', now: AFTER, deposits: [dep({ confirmed: DUE, inWindow: 0n })] },
      'Expired',
      false,
    ],
    ['one of two deposits paid in full', { deposits: [dep({ id: 'a', confirmed: 1n }), dep({ id: 'b', confirmed: DUE })] }, 'Success', true],
    [
      'two deposits partly paid do not add up (judged per deposit)',
      { deposits: [dep({ id: 'a', confirmed: DUE / 2n }), dep({ id: 'b', confirmed: DUE / 2n })] },
      'Processing',
      true,
    ],
  ])('%s', (_, over, target, transition) => {
    const d = decideSettlement(input(over));
    expect(d.target).toBe(target);
    expect(d.transition).toBe(transition);
  });
});

describe('decideSettlement — tolerance (rule 3)', () => {
  // 50 bps of 1 000 000 = 5 000 units may be missing.
  it.each<[number, bigint, string]>([
    [50, DUE - 5_000n, 'Success'],
    [50, DUE - 5_001n, 'Processing'],
    [0, DUE - 1n, 'Processing'],
    [10_000, 1n, 'Success'],
    [20_000, 1n, 'Success'], // clamped to 10 000
    [-5, DUE - 1n, 'Processing'], // clamped to 0
    [Number.NaN, DUE - 1n, 'Processing'], // not a number: 0
    [50.9, DUE - 5_000n, 'Success'], // truncated to 50
    [50.9, DUE - 5_001n, 'Processing'],
  ])('tolerance %p bps, received %p → %s', (toleranceBps, confirmed, target) => {
    expect(decideSettlement(input({ toleranceBps, deposits: [dep({ confirmed })] })).target).toBe(target);
  });
});

describe('decideSettlement — overpayment across deposits (rule 6)', () => {
  it('flags the excess of a single paid deposit once', () => {
    expect(decideSettlement(input({ deposits: [dep({ confirmed: DUE + 7n, dueIdr: 150_000n })] })).overpayment).toEqual({
      depositId: 'd1',
      due: DUE,
      received: DUE + 7n,
      excess: 7n,
      excessIdr: 1n, // 7 / 1 000 000 of 150 000 IDR = 1.05 → 1
      deposits: [{ depositId: 'd1', due: DUE, received: DUE + 7n }],
    });
    expect(decideSettlement(input({ overpaid: true, deposits: [dep({ confirmed: DUE + 7n })] })).overpayment).toBeNull();
  });

  it('not for an exact payment or an unpaid order', () => {
    expect(decideSettlement(input({ deposits: [dep({ confirmed: DUE })] })).overpayment).toBeNull();
    expect(decideSettlement(input({ deposits: [dep({ confirmed: DUE - 1n })] })).overpayment).toBeNull();
    // Two deposits half paid: not paid, so not overpaid either (Σ = 1, never > 1).
    expect(decideSettlement(input({ deposits: [dep({ id: 'a', confirmed: DUE / 2n }), dep({ id: 'b', confirmed: DUE / 2n })] })).overpayment).toBeNull();
  });

  it('two deposits of different decimals both paid in full: overpaid by one whole order value', () => {
    // ETHEREUM USDT (6 decimals) and BSC USDT (18 decimals), each exactly its due.
    const eth = dep({ id: 'eth', due: 9_230_770n, dueIdr: 150_000n, confirmed: 9_230_770n });
    const bsc = dep({ id: 'bsc', due: 9_230_770_000_000_000_000n, dueIdr: 150_001n, confirmed: 9_230_770_000_000_000_000n });
    const d = decideSettlement(input({ deposits: [eth, bsc] }));
    expect(d.target).toBe('Success');
    expect(d.paidDepositId).toBe('eth');
    expect(d.overpayment).toEqual({
      depositId: 'eth',
      due: 9_230_770n,
      received: 9_230_770n,
      excess: 9_230_770n,
      excessIdr: 150_000n,
      deposits: [
        { depositId: 'eth', due: 9_230_770n, received: 9_230_770n },
        { depositId: 'bsc', due: 9_230_770_000_000_000_000n, received: 9_230_770_000_000_000_000n },
      ],
    });
  });

  it('a small extra on another deposit counts by value, not by units (18-decimal units never outweigh 6-decimal ones)', () => {
    const a = dep({ id: 'a', due: DUE, confirmed: DUE });
    const b = dep({ id: 'b', due: DUE * 10n ** 12n, confirmed: 10n ** 12n }); // one millionth of its due
    const d = decideSettlement(input({ deposits: [a, b] }));
    expect(d.paidDepositId).toBe('a');
    expect(d.overpayment).toMatchObject({ depositId: 'a', excess: 1n });
    // Paid within tolerance on one deposit and a little on another: still short of the value → not overpaid.
    const short = decideSettlement(
      input({ toleranceBps: 100, deposits: [dep({ id: 'a', confirmed: DUE - 5_000n }), dep({ id: 'b', due: DUE * 10n ** 12n, confirmed: 10n ** 15n })] }),
    );
    expect(short.target).toBe('Success');
    expect(short.overpayment).toBeNull();
  });

  it('measures an overpayment against the full total, whatever the tolerance', () => {
    expect(decideSettlement(input({ toleranceBps: 50, deposits: [dep({ confirmed: DUE + 1n })] })).overpayment).toMatchObject({ excess: 1n });
  });
});

describe('decideSettlement — the deposit and payment that completed the order (rule 4)', () => {
  const at = (s: string) => new Date(`2026-11-23T${s}Z`);
  const pay = (id: string, amount: bigint, confirmedAt: string) => ({ id, amount, confirmedAt: at(confirmedAt), detectedAt: at(confirmedAt) });

  it('the payment whose running sum first reaches the due', () => {
    const d = decideSettlement(
      input({
        deposits: [dep({ confirmed: DUE + 5n, payments: [pay('p1', DUE / 2n, '11:00:00'), pay('p2', DUE / 2n, '11:01:00'), pay('p3', 5n, '11:02:00')] })],
      }),
    );
    expect(d).toMatchObject({ paidDepositId: 'd1', paidPaymentId: 'p2' });
  });

  it('with tolerance, the payment that came within it', () => {
    const d = decideSettlement(
      input({ toleranceBps: 50, deposits: [dep({ confirmed: DUE, payments: [pay('p1', DUE - 5_000n, '11:00:00'), pay('p2', 5_000n, '11:01:00')] })] }),
    );
    expect(d.paidPaymentId).toBe('p1');
  });

  it('of two paid deposits, the one completed first — whatever their units or the order given', () => {
    const big = dep({ id: 'bsc', due: DUE * 10n ** 12n, confirmed: DUE * 10n ** 12n, payments: [pay('late', DUE * 10n ** 12n, '11:05:00')] });
    const small = dep({ id: 'eth', confirmed: DUE, payments: [pay('first', DUE, '11:00:00')] });
    expect(decideSettlement(input({ deposits: [big, small] }))).toMatchObject({ paidDepositId: 'eth', paidPaymentId: 'first' });
    expect(decideSettlement(input({ deposits: [small, big] }))).toMatchObject({ paidDepositId: 'eth', paidPaymentId: 'first' });
  });

  it('no payments given: the deposit is named, the payment is not', () => {
    expect(decideSettlement(input({ deposits: [dep({ confirmed: DUE })] }))).toMatchObject({ paidDepositId: 'd1', paidPaymentId: null });
  });
});

describe('decideSettlement — a deep reorg after Success (rule 5)', () => {
  it('Success whose confirmed money was reorganised away → Underpaid', () => {
    expect(decideSettlement(input({ status: 'Success', reorgLoss: true, deposits: [dep({ confirmed: 0n })] }))).toMatchObject({
      target: 'Underpaid',
      transition: true,
    });
    expect(decideSettlement(input({ status: 'Success', reorgLoss: true, now: AFTER, deposits: [dep({ confirmed: DUE / 2n })] }))).toMatchObject({
      target: 'Underpaid',
      transition: true,
    });
  });

  it('stays Success when what remains still pays a deposit, or when nothing was lost to a reorg', () => {
    expect(decideSettlement(input({ status: 'Success', reorgLoss: true, deposits: [dep({ id: 'a' }), dep({ id: 'b', confirmed: DUE })] }))).toMatchObject({
      target: 'Success',
      transition: false,
    });
    expect(decideSettlement(input({ status: 'Success', deposits: [dep({ confirmed: DUE - 1n })] }))).toMatchObject({ target: 'Success', transition: false });
  });

  it('the lost payment seen again and confirmed: Underpaid → Success', () => {
    expect(decideSettlement(input({ status: 'Underpaid', reorgLoss: false, deposits: [dep({ confirmed: DUE })] }))).toMatchObject({
      target: 'Success',
      transition: true,
    });
  });
});

describe('decideSettlement — deposits (rule 7)', () => {
  it.each<[string, Partial<SettlementInput>, string]>([
    ['paid before lateEnd → settle', { deposits: [dep({ confirmed: DUE })] }, 'settle'],
    ['paid, evaluated after lateEnd → close', { status: 'Success', now: AFTER, deposits: [dep({ confirmed: DUE })] }, 'close'],
    ['unpaid before expiry → keep', {}, 'keep'],
    ['unpaid inside the late window → lapse (code released, still watched)', { now: LATE }, 'lapse'],
    ['partly paid inside the late window → lapse', { now: LATE, deposits: [dep({ confirmed: DUE / 2n })] }, 'lapse'],
    ['a late full payment inside the window → settle', { status: 'Expired', now: LATE, deposits: [dep({ confirmed: DUE })] }, 'settle'],
    ['unpaid after lateEnd → close', { now: AFTER }, 'close'],
    ['exactly at lateEnd → lapse (the window includes its end)', { now: new Date('2026-11-23T13:00:00Z') }, 'lapse'],
  ])('%s', (_, over, deposits) => {
    expect(decideSettlement(input(over)).deposits).toBe(deposits);
  });

  it('reports the end of the late window', () => {
    expect(decideSettlement(input({ lateWindowS: 90 })).lateEnd).toEqual(new Date('2026-11-23T12:01:30Z'));
  });
});
