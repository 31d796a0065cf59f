import type { CheckoutState } from '../modules/checkout/checkout-view.service.js';

/**
 * What a customer keeps: the receipt of a paid order (the printable page and the Success mail) and the
 * notices of an order that ended short (Underpaid) or unpaid (Expired), with what to do next. Built
 * from the checkout's read model, so the page and the mail say the same things. Plain strings: the
 * page escapes them, the mail sends them as text (and escaped HTML).
 */

export type ReceiptLang = 'id' | 'en';

/** The mails a customer can get; one of each per order at most (customer_mail_outbox is unique on it). */
export const CUSTOMER_MAIL_KINDS = ['receipt', 'underpaid', 'expired'] as const;
export type CustomerMailKind = (typeof CUSTOMER_MAIL_KINDS)[number];

const T = {
  id: {
    receipt: 'Bukti pembayaran',
    merchant: 'Penjual',
    order: 'Pesanan',
    customer: 'Pelanggan',
    status: 'Status',
    amount: 'Jumlah',
    paid: 'Dibayar',
    network: 'Jaringan',
    tx: 'Hash transaksi',
    explorer: 'Lihat di penjelajah blok',
    paidAt: 'Waktu pembayaran',
    late: 'Dibayar setelah batas waktu (tetap diterima).',
    overpaid: 'Anda mengirim lebih dari yang diperlukan; hubungi {m} untuk pengembalian kelebihan.',
    statusNames: {
      Created: 'Menunggu pembayaran',
      Processing: 'Pembayaran terdeteksi',
      Success: 'Lunas',
      Underpaid: 'Kurang bayar',
      Expired: 'Kedaluwarsa',
    } as Record<string, string>,
    notPaid: 'Pesanan ini belum lunas, jadi belum ada bukti pembayaran.',
    subjectReceipt: 'Bukti pembayaran pesanan {o} di {m}',
    subjectUnderpaid: 'Pembayaran pesanan {o} di {m} kurang',
    subjectExpired: 'Waktu pembayaran pesanan {o} di {m} habis',
    hello: 'Halo {n},',
    helloAnon: 'Halo,',
    thanks: '{m} telah menerima pembayaran Anda. Simpan email ini sebagai bukti pembayaran.',
    underpaid: 'Waktu pembayaran habis dan jumlah yang diterima belum cukup: diterima {r} dari {t}.',
    underpaidDo: 'Yang perlu dilakukan: kirim sisa {x} ke alamat {a} di jaringan {n} sebelum {u} untuk menyelesaikan pesanan, atau hubungi {m}.',
    expired: 'Tidak ada pembayaran yang diterima sebelum batas waktu.',
    expiredLate:
      'Jika Anda sudah mengirim pembayaran, tidak perlu melakukan apa pun: pembayaran yang tiba sebelum {u} tetap dikenali. Jangan mengirim pembayaran baru ke alamat ini.',
    expiredDo: 'Untuk membayar, kembali ke {m} dan buat pesanan baru.',
    footer: 'Email ini dikirim karena alamat Anda dicantumkan pada pesanan ini.',
  },
  en: {
    receipt: 'Receipt',
    merchant: 'Seller',
    order: 'Order',
    customer: 'Customer',
    status: 'Status',
    amount: 'Amount',
    paid: 'Paid',
    network: 'Network',
    tx: 'Transaction hash',
    explorer: 'View on the block explorer',
    paidAt: 'Paid at',
    late: 'Paid after the deadline (still accepted).',
    overpaid: 'You sent more than required; contact {m} about a refund of the excess.',
    statusNames: { Created: 'Awaiting payment', Processing: 'Payment detected', Success: 'Paid', Underpaid: 'Underpaid', Expired: 'Expired' } as Record<
      string,
      string
    >,
    notPaid: 'This order is not paid, so there is no receipt yet.',
    subjectReceipt: 'Receipt for order {o} at {m}',
    subjectUnderpaid: 'Payment for order {o} at {m} is incomplete',
    subjectExpired: 'Payment time for order {o} at {m} is over',
    hello: 'Hello {n},',
    helloAnon: 'Hello,',
    thanks: '{m} has received your payment. Keep this email as your receipt.',
    underpaid: 'Payment time ran out and the amount received is not enough: received {r} of {t}.',
    underpaidDo: 'What to do: send the remaining {x} to the address {a} on the {n} network before {u} to complete the order, or contact {m}.',
    expired: 'No payment arrived before the deadline.',
    expiredLate:
      'If you already sent a payment, there is nothing to do: payments arriving before {u} are still recognised. Do not send a new payment to this address.',
    expiredDo: 'To pay, return to {m} and place a new order.',
    footer: 'You received this email because your address was given with this order.',
  },
};

/** `{x}` placeholders filled by split/join (no replacement patterns can apply). */
const fill = (s: string, v: Record<string, string>) => Object.entries(v).reduce((acc, [k, x]) => acc.split(`{${k}}`).join(x), s);

const idr = (lang: ReceiptLang, n: string) =>
  new Intl.NumberFormat(lang === 'id' ? 'id-ID' : 'en-US', { style: 'currency', currency: 'IDR', maximumFractionDigits: 0 }).format(Number(n));

/** Times in UTC, said so: a mail or a printout has no browser time zone to lean on. */
const when = (lang: ReceiptLang, unix: number) =>
  new Intl.DateTimeFormat(lang === 'id' ? 'id-ID' : 'en-GB', { dateStyle: 'medium', timeStyle: 'short', timeZone: 'UTC' }).format(new Date(unix * 1000)) +
  ' UTC';

/** Adds decimal strings exactly (token amounts are decimal strings with at most 18 places). */
function addDecimals(values: string[]): string {
  const scale = Math.max(0, ...values.map((v) => v.split('.')[1]?.length ?? 0));
  const total = values.reduce((s, v) => {
    const [w = '0', f = ''] = v.split('.');
    return s + BigInt(w + f.padEnd(scale, '0'));
  }, 0n);
  const digits = total.toString().padStart(scale + 1, '0');
  const whole = digits.slice(0, digits.length - scale);
  const frac = digits.slice(digits.length - scale).replace(/0+$/, '');
  return frac ? `${whole}.${frac}` : whole;
}

export interface ReceiptLine {
  label: string;
  value: string;
  mono?: boolean;
  /** An explorer link for this line's value, where one exists. */
  href?: string | null;
}

/** The receipt of a paid order as labelled lines (null when the order is not paid). */
export function receiptLines(state: CheckoutState, lang: ReceiptLang): ReceiptLine[] | null {
  if (state.order.status !== 'Success') return null;
  const s = T[lang];
  const confirmed = state.payments.filter((p) => p.status === 'confirmed');
  const last = confirmed[confirmed.length - 1];
  const lines: ReceiptLine[] = [
    { label: s.merchant, value: state.merchant.name },
    { label: s.order, value: state.order.order_no },
  ];
  if (state.order.name) lines.push({ label: s.customer, value: state.order.name });
  lines.push({ label: s.status, value: s.statusNames.Success! }, { label: s.amount, value: idr(lang, state.order.amount) });
  if (last) {
    lines.push({ label: s.paid, value: `${addDecimals(confirmed.map((p) => p.amount))} ${last.token_symbol}` }, { label: s.network, value: last.network_name });
    for (const p of confirmed) lines.push({ label: s.tx, value: p.tx_hash, mono: true, href: p.explorer_url });
  }
  if (state.order.paid_at) lines.push({ label: s.paidAt, value: when(lang, state.order.paid_at) });
  return lines;
}

/** Sentences under the receipt: late payment, overpayment. */
export function receiptNotes(state: CheckoutState, lang: ReceiptLang): string[] {
  const s = T[lang];
  const notes: string[] = [];
  if (state.payments.some((p) => p.status === 'confirmed' && p.late)) notes.push(s.late);
  if (state.order.overpaid) notes.push(fill(s.overpaid, { m: state.merchant.name }));
  return notes;
}

export const receiptWords = (lang: ReceiptLang) => ({
  title: T[lang].receipt,
  notPaid: T[lang].notPaid,
  explorer: T[lang].explorer,
  status: (st: string) => T[lang].statusNames[st] ?? st,
});

export interface CustomerMail {
  subject: string;
  text: string;
  html: string;
}

const escape = (x: string) => x.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** One language's body of a customer mail, as paragraphs and (for the receipt) lines. */
function mailPart(kind: CustomerMailKind, state: CheckoutState, lang: ReceiptLang): { subject: string; paragraphs: string[]; lines: ReceiptLine[] } {
  const s = T[lang];
  const m = state.merchant.name;
  const o = state.order.order_no;
  const hello = state.order.name ? fill(s.hello, { n: state.order.name }) : s.helloAnon;
  const dep = state.deposits[state.deposits.length - 1];
  const lateUntil = when(lang, state.order.late_until ?? 0);
  if (kind === 'receipt') {
    return {
      subject: fill(s.subjectReceipt, { o, m }),
      paragraphs: [hello, fill(s.thanks, { m }), ...receiptNotes(state, lang)],
      lines: receiptLines(state, lang) ?? [],
    };
  }
  if (kind === 'underpaid' && dep) {
    const sym = dep.token_symbol;
    return {
      subject: fill(s.subjectUnderpaid, { o, m }),
      paragraphs: [
        hello,
        fill(s.underpaid, { r: `${dep.received} ${sym}`, t: `${dep.total_amount} ${sym}` }),
        fill(s.underpaidDo, { x: `${dep.remaining} ${sym}`, a: dep.address, n: dep.network_name, u: lateUntil, m }),
      ],
      lines: [
        { label: s.order, value: o },
        { label: s.amount, value: idr(lang, state.order.amount) },
      ],
    };
  }
  return {
    subject: fill(s.subjectExpired, { o, m }),
    paragraphs: [hello, s.expired, ...(dep ? [fill(s.expiredLate, { u: lateUntil })] : []), fill(s.expiredDo, { m })],
    lines: [
      { label: s.order, value: o },
      { label: s.amount, value: idr(lang, state.order.amount) },
    ],
  };
}

/**
 * The mail for `kind`, in Indonesian then English (the order records no language; the merchants'
 * customers read Indonesian first). Text and HTML carry the same content; every merchant or customer
 * string is escaped in the HTML.
 */
export function customerMail(kind: CustomerMailKind, state: CheckoutState): CustomerMail {
  const parts = (['id', 'en'] as const).map((lang) => ({ lang, ...mailPart(kind, state, lang) }));
  const text = parts
    .map((p) => [...p.paragraphs, '', ...p.lines.map((l) => `${l.label}: ${l.value}${l.href ? `\n  ${l.href}` : ''}`), '', T[p.lang].footer].join('\n'))
    .join('\n\n----------------------------------------\n\n');
  const html = parts
    .map(
      (p) =>
        `<div lang="${p.lang}">${p.paragraphs.map((x) => `<p>${escape(x)}</p>`).join('')}` +
        `<table>${p.lines.map((l) => `<tr><th align="left">${escape(l.label)}</th><td${l.mono ? ' style="font-family:monospace;word-break:break-all"' : ''}>${escape(l.value)}${l.href ? ` <a href="${escape(l.href)}">${escape(T[p.lang].explorer)}</a>` : ''}</td></tr>`).join('')}</table>` +
        `<p style="color:#555">${escape(T[p.lang].footer)}</p></div>`,
    )
    .join('<hr>');
  return { subject: `${parts[0]!.subject} / ${parts[1]!.subject}`.replace(/[\r\n\t]+/g, ' '), text, html: `<!doctype html><html><body>${html}</body></html>` };
}
