import { paymentConfirmations } from '../../src/modules/checkout/checkout-view.service';

describe('paymentConfirmations: what the checkout page shows per transfer', () => {
  it.each([
    ['a confirmed payment shows all it needs, whatever the head', { status: 'confirmed', blockNumber: 100n }, undefined, 12, 12],
    ['its own block counts as one', { status: 'pending', blockNumber: 100n }, 100n, 12, 1],
    ['each block scanned above it counts', { status: 'pending', blockNumber: 100n }, 104n, 12, 5],
    ['never more than it needs', { status: 'pending', blockNumber: 100n }, 500n, 12, 12],
    ['no cursor yet: none', { status: 'pending', blockNumber: 100n }, undefined, 12, 0],
    ['a cursor behind its block (a rescan): none', { status: 'pending', blockNumber: 100n }, 90n, 12, 0],
    ['block numbers read as text (int8 from the database)', { status: 'pending', blockNumber: '100' }, 101n, 3, 2],
  ] as const)('%s', (_what, payment, head, needed, shown) => {
    expect(paymentConfirmations(payment, head, needed)).toBe(shown);
  });
});
