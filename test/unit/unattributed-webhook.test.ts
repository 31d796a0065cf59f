import { PAYMENT_UNATTRIBUTED } from '../../src/modules/events/event.catalogue';
import { buildEventBody, idempotencyKeyOf, type EventFacts } from '../../src/modules/webhooks/webhook.payload';

const facts = (reason: Record<string, unknown>): EventFacts => ({
  event: { id: 'e1', seq: 3, type: PAYMENT_UNATTRIBUTED, fromStatus: 'Expired', toStatus: 'Expired', reason, createdAt: new Date(1_700_000_000_000) },
  order: {
    id: 'o1',
    orderNo: 'A-1',
    merchantId: 'm1',
    environment: 'sandbox',
    amount: 150000n,
    currency: 'IDR',
    createdAt: new Date(0),
    expiresAt: new Date(0),
    paidAt: null,
    overpaid: false,
    reorged: false,
  },
  deposits: [
    {
      id: 'd1',
      address: '0xabc',
      network: 'ETHEREUM',
      token: { symbol: 'USDT', address: '0xt', decimals: 6 },
      totalAmount: 9_230_769n,
      amountReceived: 0n,
      createdAt: new Date(0),
    },
  ],
  payments: [],
});

describe('transaction.unattributed webhook body', () => {
  it('carries the receipt in units of the token that arrived (18-decimal BINANCE USDC at an ETHEREUM USDT deposit), keyed by event', () => {
    const f = facts({
      receiptId: 'r1',
      depositId: 'd1',
      txHash: '0xhash',
      logIndex: 2,
      network: 'BINANCE',
      tokenAddress: '0xusdc',
      tokenSymbol: 'USDC',
      decimals: 18,
      toAddress: '0xabc',
      amount: '1500000000000000000',
      reason: 'wrong_network',
    });
    const key = idempotencyKeyOf('transaction.unattributed', f);
    expect(key).toBe('evt_e1');
    const body = buildEventBody('transaction.unattributed', f, key);
    expect(body.event).toBe('transaction.unattributed');
    expect(body.data.unattributed).toEqual({
      reason: 'wrong_network',
      network: 'BINANCE',
      token: { symbol: 'USDC', address: '0xusdc', decimals: 18 },
      address: '0xabc',
      tx_hash: '0xhash',
      log_index: 2,
      amount: '1.5',
    });
    // The order's own deposit is still the one described (never credited).
    expect(body.data.deposit_address).toBe('0xabc');
    expect(body.data.amount_received_crypto).toBe('0');
  });
});

describe('transaction.unattributed webhook body for native coin', () => {
  it('names the native coin: null token address, the coin’s symbol and decimals, log index -1', () => {
    const f = facts({
      receiptId: 'r2',
      depositId: 'd1',
      txHash: '0xnative',
      logIndex: -1,
      network: 'ETHEREUM',
      tokenAddress: null,
      tokenSymbol: 'ETH',
      decimals: 18,
      toAddress: '0xabc',
      amount: '123456',
      reason: 'native_coin',
    });
    const body = buildEventBody('transaction.unattributed', f, idempotencyKeyOf('transaction.unattributed', f));
    expect(body.data.unattributed).toEqual({
      reason: 'native_coin',
      network: 'ETHEREUM',
      token: { symbol: 'ETH', address: null, decimals: 18 },
      address: '0xabc',
      tx_hash: '0xnative',
      log_index: -1,
      amount: '0.000000000000123456',
    });
  });
});
