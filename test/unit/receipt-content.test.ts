/**
 * The receipt and the customer mails from the checkout's read model: the same facts on the printable
 * page and in the mail, explorer links where the network has one, hostile strings kept as text.
 */
import { renderReceipt } from '../../src/checkout/checkout.page';
import type { CheckoutState } from '../../src/modules/checkout/checkout-view.service';
import { customerMail, receiptLines } from '../../src/checkout/receipt.content';

const evil = `<script>alert(1)</script>"'&`;
const state = (over: Partial<CheckoutState['order']> = {}, payments: Partial<CheckoutState['payments'][number]>[] = []): CheckoutState =>
  ({
    environment: 'mainnet',
    merchant: { name: `Toko ${evil}` },
    order: {
      order_no: 'INV-7',
      merchant_id: 'm',
      amount: '250000',
      currency: 'IDR',
      status: 'Success',
      name: 'Budi',
      overpaid: false,
      created_at: 1,
      expired_at: 2,
      paid_at: 1_764_300_000,
      late_until: 1_764_303_600,
      success_url: 'https://shop.example/ok',
      cancel_url: null,
      auto_redirect: false,
      return_url: 'https://shop.example/ok?order_no=INV-7&status=Success',
      ...over,
    },
    link: null,
    choices: [],
    deposits: [],
    payments: payments.map((p) => ({
      network: 'ETHEREUM',
      network_name: 'Ethereum',
      token_symbol: 'USDT',
      tx_hash: '0xaa',
      amount: '10',
      status: 'confirmed',
      late: false,
      confirmations: 1,
      confirmations_needed: 1,
      explorer_url: null,
      detected_at: 1,
      confirmed_at: 1,
      ...p,
    })),
    now: 3,
  }) as unknown as CheckoutState;

it('a paid order: the amount, the sum paid, each hash with its explorer link where one exists; the page escapes everything', () => {
  const s = state({}, [
    { tx_hash: '0xaa', amount: '7.5', explorer_url: 'https://etherscan.io/tx/0xaa' },
    { tx_hash: '0xbb', amount: '2.500001', explorer_url: null, late: true },
  ]);
  const lines = receiptLines(s, 'en')!;
  expect(lines.find((l) => l.label === 'Paid')!.value).toBe('10.000001 USDT');
  expect(lines.filter((l) => l.label === 'Transaction hash')).toEqual([
    { label: 'Transaction hash', value: '0xaa', mono: true, href: 'https://etherscan.io/tx/0xaa' },
    { label: 'Transaction hash', value: '0xbb', mono: true, href: null },
  ]);
  expect(lines.find((l) => l.label === 'Paid at')!.value).toMatch(/UTC$/);
  const html = renderReceipt(s, 'en', '/checkout/x?key=k&lang=en', null);
  expect(html).toContain('<a class="noprint-href" href="https://etherscan.io/tx/0xaa"');
  expect(html.match(/etherscan/g)).toHaveLength(2); // the link, and the URL printed beside it for paper
  expect(html).toContain('Paid after the deadline (still accepted).');
  expect(html).not.toContain('<script>alert');
  expect(html).toContain('Toko &#60;script&#62;alert(1)&#60;/script&#62;&#34;&#39;&#38;');
  expect(html.match(/<h1/g)).toHaveLength(1);
  expect(html).toContain('href="https://shop.example/ok?order_no=INV-7&#38;status=Success"');
});

it('an unpaid order has no receipt, and says so', () => {
  expect(receiptLines(state({ status: 'Underpaid' }), 'id')).toBeNull();
  expect(renderReceipt(state({ status: 'Underpaid' }), 'id', '/c', null)).toContain('Pesanan ini belum lunas, jadi belum ada bukti pembayaran. (Kurang bayar)');
});

it('mails: Indonesian then English, same facts in text and HTML, hostile names escaped in HTML, one-line subject', () => {
  const s = state({ name: `Budi\r\nBcc: x@evil.test` }, [{ tx_hash: '0xaa', explorer_url: 'https://etherscan.io/tx/0xaa' }]);
  s.merchant.name = `Toko\r\nBcc: y@evil.test`;
  const mail = customerMail('receipt', s);
  expect(mail.subject).not.toMatch(/[\r\n]/);
  expect(mail.text.indexOf('Hash transaksi')).toBeLessThan(mail.text.indexOf('Transaction hash'));
  expect(mail.text).toContain('Hash transaksi: 0xaa\n  https://etherscan.io/tx/0xaa');
  expect(mail.text).toContain('Transaction hash: 0xaa\n  https://etherscan.io/tx/0xaa');
  expect(mail.html).toContain('<a href="https://etherscan.io/tx/0xaa">View on the block explorer</a>');
  const hostile = customerMail('expired', state({ status: 'Expired', name: evil }));
  expect(hostile.html).not.toContain('<script>');
  expect(hostile.text).toContain(`Hello ${evil},`);
});
