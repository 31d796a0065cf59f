import type { App } from '../../src/app';
import { claimView, renderClaimShell } from '../../src/checkout/refund-claim.page';
import type { ClaimInfo } from '../../src/modules/refunds/refund.service';

const info = (over: Partial<ClaimInfo> = {}): ClaimInfo => ({
  refundId: '5f0c1d8e-0000-4000-8000-000000000001',
  status: 'confirmed',
  open: false,
  merchantName: 'Toko Batik Sari',
  orderNo: 'INV-1',
  network: 'ETHEREUM',
  tokenSymbol: 'USDT',
  decimals: 6,
  amount: '2500000',
  feeMode: 'deduct',
  toAddress: '0x000000000000000000000000000000000000dEaD',
  environment: 'production',
  reason: 'Overpaid',
  sentAmount: '2431007',
  txHash: '0xabc',
  ...over,
});
const config = (devChains: boolean) => ({ DEV_CHAINS: devChains }) as App['config'];

it('shows token units as decimals, the amount sent after a deducted fee, and no internal id', () => {
  const v = claimView(info(), config(false));
  expect(v).toMatchObject({
    amount: '2.5',
    sent_amount: '2.431007',
    merchant: 'Toko Batik Sari',
    network_name: 'Ethereum',
    token_symbol: 'USDT',
    fee_mode: 'deduct',
  });
  expect(JSON.stringify(v)).not.toContain('5f0c1d8e');
  expect(claimView(info({ sentAmount: null, txHash: null }), config(false))).toMatchObject({ sent_amount: null, tx_hash: null, explorer_url: null });
});

it("links the transaction on the network's public explorer; none for a local dev chain", () => {
  expect(claimView(info(), config(false)).explorer_url).toBe('https://etherscan.io/tx/0xabc');
  expect(claimView(info({ environment: 'sandbox', network: 'SOLANA', txHash: 'sig1' }), config(false)).explorer_url).toBe(
    'https://solscan.io/tx/sig1?cluster=devnet',
  );
  expect(claimView(info({ environment: 'sandbox' }), config(true)).explorer_url).toBeNull();
});

it('the shell names no refund (the token stays in the fragment) and loads only its own script', () => {
  const html = renderClaimShell('id');
  expect(html).toContain('<html lang="id">');
  expect(html).toContain('<title>Pengembalian dana</title>');
  expect(html.match(/<script src="[^"]+"/g)).toEqual(['<script src="/checkout/assets/refund.js"']);
});
