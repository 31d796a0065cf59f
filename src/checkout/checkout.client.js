/* global window, document, location, history, navigator, fetch, setTimeout, setInterval, clearInterval, URLSearchParams, graphqlWs */
/*
 * The hosted checkout and payment-link pages, in the shopper's browser. Served as a static file (the
 * page's CSP allows no inline script). Every text reaches the DOM through textContent or attributes,
 * never innerHTML, so a merchant's or shopper's string can never become markup.
 */
'use strict';
(function () {
  const boot = JSON.parse(document.getElementById('boot').textContent);
  const params = new URLSearchParams(location.search);
  const key = params.get('key') || '';
  const base = '/api/v2/' + boot.env;

  const STRINGS = {
    id: {
      switchTo: 'English',
      switchLabel: 'Switch to English',
      loading: 'Memuat…',
      order: 'Pesanan {0}',
      for: 'untuk {0}',
      total: 'Total',
      steps: ['Pilih', 'Bayar', 'Konfirmasi', 'Selesai'],
      chooseTitle: 'Pilih cara membayar',
      chooseHelp: 'Pilih token dan jaringan yang ada di dompet Anda. Pilihan ini tidak dapat diubah setelah alamat pembayaran dibuat.',
      on: 'di {0}',
      preparing: 'Menyiapkan alamat pembayaran…',
      payTitle: 'Kirim pembayaran',
      sendExactly: 'Kirim tepat',
      toAddress: 'ke alamat ini di jaringan {0}',
      copy: 'Salin',
      copyAmount: 'Salin jumlah',
      copyAddress: 'Salin alamat',
      copied: 'Disalin',
      copiedAmount: 'Jumlah disalin',
      copiedAddress: 'Alamat disalin',
      uniqueCode:
        'Jumlah ini sudah termasuk {0} yang ditambahkan sebagai kode unik pesanan ini ({1}): kirim jumlah persis ini agar pembayaran Anda langsung dikenali.',
      idrEquivalent: 'Setara {0}',
      partOrder: 'harga pesanan {0}',
      partFee: 'biaya layanan {0}',
      partCode: 'kode unik {0}',
      orderAmount: 'Jumlah pesanan',
      walletTitle: 'Pilih aplikasi dompet',
      walletHelp: 'Dompet yang dapat membayar {0} di {1}:',
      changeToken: 'Ganti token',
      printReceipt: 'Bukti pembayaran untuk dicetak',
      rate: 'Kurs: 1 {0} = {1}',
      fee: 'Biaya layanan: {0} ({1})',
      feeIncluded: 'sudah termasuk',
      feeAdded: 'ditambahkan',
      exchangeWarning:
        'Bursa (exchange) sering memotong biaya penarikan dari jumlah yang dikirim. Jika membayar dari bursa, pastikan jumlah yang tiba di alamat ini tetap sama persis.',
      qrAlt: 'Kode QR untuk membayar {0} {1} ke {2}',
      openIn: 'Buka di {0}',
      walletsHelp: 'Membayar dari ponsel ini? Buka dompet Anda langsung:',
      timeLeft: 'Sisa waktu',
      hurry: 'Waktu hampir habis: selesaikan pembayaran sekarang.',
      expiresAt: 'Berakhir pukul {0}',
      received: 'Diterima {0} dari {1}',
      remainder: 'Kirim sisa {0} ke alamat yang sama. Kode QR di bawah sudah berisi jumlah sisa ini.',
      detectedTitle: 'Pembayaran terdeteksi',
      confirming: 'Menunggu konfirmasi jaringan: {0} dari {1}',
      confirmingHelp: 'Anda tidak perlu melakukan apa pun. Halaman ini akan diperbarui otomatis.',
      viewTx: 'Lihat transaksi',
      paidTitle: 'Pembayaran berhasil',
      paidHelp: 'Terima kasih! {0} telah menerima pembayaran Anda.',
      receipt: 'Bukti pembayaran',
      amountIdr: 'Jumlah',
      amountToken: 'Dibayar',
      network: 'Jaringan',
      txHash: 'Hash transaksi',
      paidAt: 'Waktu',
      overpaid: 'Anda mengirim lebih dari yang diperlukan; hubungi {0} untuk pengembalian kelebihan.',
      expiredTitle: 'Waktu pembayaran habis',
      expiredHelp: 'Tidak ada pembayaran yang diterima sebelum batas waktu.',
      expiredLate:
        'Jika Anda sudah mengirim, biarkan halaman ini terbuka: pembayaran yang tiba sebelum {0} tetap dikenali. Jangan mengirim pembayaran baru ke alamat ini.',
      expiredAgain: 'Untuk membayar, kembali ke {0} dan buat pesanan baru.',
      underpaidTitle: 'Pembayaran kurang',
      underpaidHelp: 'Waktu habis dan jumlah yang diterima belum cukup.',
      underpaidTopUp: 'Kirim sisa {0} ke alamat yang sama sebelum {1} untuk menyelesaikan pesanan, atau hubungi {2}.',
      lateNote: 'Dibayar setelah batas waktu (masih diterima).',
      returnTo: 'Kembali ke {0}',
      redirecting: 'Mengalihkan ke {0} dalam {1} detik…',
      errTitle: 'Halaman tidak dapat dibuka',
      errors: {
        INVALID_API_KEY: 'Tautan pembayaran ini tidak valid. Periksa bahwa Anda membuka tautan lengkap dari toko.',
        CHECKOUT_KEY_EXPIRED: 'Tautan pembayaran ini sudah kedaluwarsa. Kembali ke toko untuk membuat pesanan baru.',
        SCOPE_DENIED: 'Tautan ini bukan untuk pesanan ini.',
        PAYMENT_LINK_NOT_FOUND: 'Tautan pembayaran tidak ditemukan.',
        network: 'Koneksi terputus. Mencoba lagi…',
      },
      linkTitle: 'Tautan pembayaran',
      product: 'Produk',
      qty: 'Jml',
      price: 'Harga',
      pay: 'Bayar {0}',
      linkInactive: 'Tautan pembayaran ini sudah dinonaktifkan oleh penjual.',
      linkExpired: 'Tautan pembayaran ini sudah kedaluwarsa.',
      linkUsedUp: 'Tautan pembayaran ini sudah mencapai batas penggunaan.',
      linkWhatNow: 'Hubungi {0} untuk tautan yang baru.',
      live: 'Status diperbarui langsung.',
      polling: 'Status diperbarui berkala.',
      statusNow: 'Status: {0}',
      status: { Created: 'Menunggu pembayaran', Processing: 'Pembayaran terdeteksi', Success: 'Lunas', Underpaid: 'Kurang bayar', Expired: 'Kedaluwarsa' },
    },
    en: {
      switchTo: 'Bahasa Indonesia',
      switchLabel: 'Ganti ke Bahasa Indonesia',
      loading: 'Loading…',
      order: 'Order {0}',
      for: 'for {0}',
      total: 'Total',
      steps: ['Choose', 'Pay', 'Confirm', 'Done'],
      chooseTitle: 'Choose how to pay',
      chooseHelp: 'Pick a token and network your wallet holds. The choice is locked once the payment address is created.',
      on: 'on {0}',
      preparing: 'Preparing your payment address…',
      payTitle: 'Send your payment',
      sendExactly: 'Send exactly',
      toAddress: 'to this address on the {0} network',
      copy: 'Copy',
      copyAmount: 'Copy amount',
      copyAddress: 'Copy address',
      copied: 'Copied',
      copiedAmount: 'Amount copied',
      copiedAddress: 'Address copied',
      uniqueCode: 'This amount includes {0} added as this order’s unique code ({1}): send exactly this amount so your payment is recognised at once.',
      idrEquivalent: 'Equivalent to {0}',
      partOrder: 'order amount {0}',
      partFee: 'service fee {0}',
      partCode: 'unique code {0}',
      orderAmount: 'Order amount',
      walletTitle: 'Choose your wallet app',
      walletHelp: 'Wallets that can pay {0} on {1}:',
      changeToken: 'Change token',
      printReceipt: 'Printable receipt',
      rate: 'Rate: 1 {0} = {1}',
      fee: 'Service fee: {0} ({1})',
      feeIncluded: 'included',
      feeAdded: 'added',
      exchangeWarning:
        'Exchanges often deduct a withdrawal fee from the amount sent. If you pay from an exchange, make sure the exact amount arrives at this address.',
      qrAlt: 'QR code to pay {0} {1} to {2}',
      openIn: 'Open in {0}',
      walletsHelp: 'Paying from this phone? Open your wallet directly:',
      timeLeft: 'Time left',
      hurry: 'Time is almost up: complete your payment now.',
      expiresAt: 'Expires at {0}',
      received: 'Received {0} of {1}',
      remainder: 'Send the remaining {0} to the same address. The QR code below already holds this remainder.',
      detectedTitle: 'Payment detected',
      confirming: 'Waiting for network confirmations: {0} of {1}',
      confirmingHelp: 'Nothing else to do. This page updates by itself.',
      viewTx: 'View transaction',
      paidTitle: 'Payment complete',
      paidHelp: 'Thank you! {0} has received your payment.',
      receipt: 'Receipt',
      amountIdr: 'Amount',
      amountToken: 'Paid',
      network: 'Network',
      txHash: 'Transaction hash',
      paidAt: 'Time',
      overpaid: 'You sent more than required; contact {0} about a refund of the excess.',
      expiredTitle: 'Payment time is over',
      expiredHelp: 'No payment arrived before the deadline.',
      expiredLate: 'If you already sent it, keep this page open: payments arriving before {0} are still recognised. Do not send a new payment to this address.',
      expiredAgain: 'To pay, return to {0} and place a new order.',
      underpaidTitle: 'Payment incomplete',
      underpaidHelp: 'Time ran out and the amount received is not enough.',
      underpaidTopUp: 'Send the remaining {0} to the same address before {1} to complete the order, or contact {2}.',
      lateNote: 'Paid after the deadline (still accepted).',
      returnTo: 'Return to {0}',
      redirecting: 'Returning to {0} in {1} seconds…',
      errTitle: 'This page cannot be opened',
      errors: {
        INVALID_API_KEY: 'This payment link is not valid. Check that you opened the complete link from the shop.',
        CHECKOUT_KEY_EXPIRED: 'This payment link has expired. Return to the shop to place a new order.',
        SCOPE_DENIED: 'This link is not for this order.',
        PAYMENT_LINK_NOT_FOUND: 'Payment link not found.',
        network: 'Connection lost. Retrying…',
      },
      linkTitle: 'Payment link',
      product: 'Product',
      qty: 'Qty',
      price: 'Price',
      pay: 'Pay {0}',
      linkInactive: 'This payment link was deactivated by the seller.',
      linkExpired: 'This payment link has expired.',
      linkUsedUp: 'This payment link has reached its usage limit.',
      linkWhatNow: 'Contact {0} for a new link.',
      live: 'Status updates live.',
      polling: 'Status updates periodically.',
      statusNow: 'Status: {0}',
      status: { Created: 'Awaiting payment', Processing: 'Payment detected', Success: 'Paid', Underpaid: 'Underpaid', Expired: 'Expired' },
    },
  };
  const WALLET_NAMES = { METAMASK: 'MetaMask', TRUSTWALLET: 'Trust Wallet', PHANTOM: 'Phantom', WALLETCONNECT: 'WalletConnect' };

  let lang = boot.lang === 'en' ? 'en' : 'id';
  const S = () => STRINGS[lang];
  /** `{0}`… placeholders filled by split/join: no replacement patterns ($&, $') can apply. */
  const fmt = (s, ...args) => args.reduce((acc, v, i) => acc.split('{' + i + '}').join(String(v)), s);
  const t = (k, ...args) => fmt(S()[k], ...args);
  const locale = () => (lang === 'id' ? 'id-ID' : 'en-US');
  const idr = (n) => new Intl.NumberFormat(locale(), { style: 'currency', currency: 'IDR', maximumFractionDigits: 0 }).format(Number(n));
  const time = (unix) => new Date(unix * 1000).toLocaleTimeString(locale(), { hour: '2-digit', minute: '2-digit' });
  const dateTime = (unix) => new Date(unix * 1000).toLocaleString(locale(), { dateStyle: 'medium', timeStyle: 'short' });

  /** Builds an element; strings among `kids` become text nodes. */
  function h(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'text') e.textContent = v;
      else if (k === 'onclick') e.addEventListener('click', v);
      else e.setAttribute(k, v === true ? '' : v);
    }
    for (const kid of kids.flat())
      if (kid !== null && kid !== undefined && kid !== false) e.append(typeof kid === 'string' ? document.createTextNode(kid) : kid);
    return e;
  }
  const view = document.getElementById('view');
  const live = document.getElementById('live');
  let lastAnnounced = '';
  const announce = (msg) => {
    if (msg === lastAnnounced) return;
    lastAnnounced = msg;
    live.textContent = msg;
  };
  function show(...nodes) {
    const focused = document.activeElement && document.activeElement.id;
    view.replaceChildren(...nodes);
    // Re-rendering must not steal the keyboard user's place.
    if (focused) {
      const again = document.getElementById(focused);
      if (again) again.focus();
    }
  }

  const langBtn = document.getElementById('lang');
  function paintLang() {
    document.documentElement.lang = lang;
    langBtn.textContent = S().switchTo;
    langBtn.setAttribute('aria-label', S().switchLabel);
    langBtn.setAttribute('lang', lang === 'id' ? 'en' : 'id');
  }
  langBtn.addEventListener('click', () => {
    lang = lang === 'id' ? 'en' : 'id';
    params.set('lang', lang);
    history.replaceState(null, '', location.pathname + '?' + params.toString());
    paintLang();
    rerender();
  });
  paintLang();
  let rerender = () => undefined;

  async function api(path, body) {
    const r = await fetch(base + path, {
      method: body ? 'POST' : 'GET',
      headers: Object.assign({ 'content-type': 'application/json' }, key ? { 'api-key': key } : {}),
      body: body ? JSON.stringify(body) : undefined,
      credentials: 'omit',
    });
    const j = await r.json();
    if (j.status_code >= 400) {
      const err = new Error(j.message);
      err.code = j.data && j.data.code;
      throw err;
    }
    return j.data;
  }

  // Which copy button was pressed last, and when: a re-render (new state, language switch) keeps its label.
  const copied = { id: null, at: 0 };
  function copyButton(id, value, label, done) {
    const fresh = copied.id === id && Date.now() - copied.at < 2000;
    return h('button', {
      type: 'button',
      id,
      class: 'secondary',
      'aria-label': label,
      onclick: async () => {
        try {
          await navigator.clipboard.writeText(value);
        } catch {
          // Clipboard refused (permissions, insecure context): leave the value selectable instead.
        }
        copied.id = id;
        copied.at = Date.now();
        // The page may have re-rendered while the clipboard answered: label the button that is shown now.
        const shown = document.getElementById(id);
        if (shown) shown.textContent = S().copied;
        announce(done);
        setTimeout(() => {
          const again = document.getElementById(id);
          if (again) again.textContent = S().copy;
        }, 2000);
      },
      text: fresh ? S().copied : S().copy,
    });
  }

  function errorScreen(code, message) {
    const text = S().errors[code] || message;
    show(h('section', { class: 'card state-bad', role: 'alert' }, h('h1', { text: S().errTitle }), h('p', { class: 'error', text })));
    document.title = S().errTitle;
  }

  // ---------------------------------------------------------------- error pages (bad key, unknown link)
  if (boot.kind === 'error') {
    rerender = () => errorScreen(boot.error.code, boot.error.message);
    rerender();
    return;
  }

  // ---------------------------------------------------------------- printable receipt (server-rendered)
  if (boot.kind === 'receipt') {
    const btn = document.getElementById('print');
    if (btn) btn.addEventListener('click', () => window.print());
    langBtn.addEventListener('click', () => location.reload());
    return;
  }

  // ---------------------------------------------------------------- payment link page
  if (boot.kind === 'link') {
    let link = null;
    let failure = null;
    let busy = false;
    const merchant = boot.merchant || '';
    rerender = () => {
      if (failure) return errorScreen(failure.code, failure.message);
      if (!link) return show(h('p', { class: 'muted', text: S().loading }));
      const rows = link.products.map((p) =>
        h('tr', {}, h('td', { text: p.name }), h('td', { class: 'num', text: String(p.quantity) }), h('td', { class: 'num', text: idr(p.price * p.quantity) })),
      );
      const table = h(
        'table',
        {},
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            h('th', { scope: 'col', text: S().product }),
            h('th', { scope: 'col', class: 'num', text: S().qty }),
            h('th', { scope: 'col', class: 'num', text: S().price }),
          ),
        ),
        h('tbody', {}, rows),
        h(
          'tfoot',
          {},
          h(
            'tr',
            {},
            h('th', { scope: 'row', colspan: '2', text: S().total }),
            h('td', { class: 'num', id: 'link-total' }, h('strong', { text: idr(link.total_price) })),
          ),
        ),
      );
      let action;
      if (link.valid) {
        action = h('button', {
          type: 'button',
          id: 'pay',
          disabled: busy,
          text: t('pay', idr(link.total_price)),
          onclick: async () => {
            busy = true;
            rerender();
            try {
              const d = await api('/order/payment-link', { payment_link_id: boot.linkId });
              const orderId = d.api_key.split('_')[1];
              location.assign('/checkout/' + encodeURIComponent(orderId) + '?key=' + encodeURIComponent(d.api_key) + '&lang=' + lang);
            } catch (e) {
              busy = false;
              await refresh();
              announce(e.message);
            }
          },
        });
      } else {
        const why = link.status === 'Inactive' ? S().linkInactive : link.status === 'Expired' ? S().linkExpired : S().linkUsedUp;
        action = h('div', { class: 'notice', role: 'alert', id: 'link-unavailable' }, h('p', { text: why }), h('p', { text: t('linkWhatNow', merchant) }));
      }
      show(h('section', { class: 'card' }, h('p', { class: 'muted', text: S().linkTitle }), h('h1', { id: 'link-title', text: link.title }), table), action);
    };
    const refresh = async () => {
      try {
        link = await api('/payment-links/' + encodeURIComponent(boot.linkId) + '/validate');
      } catch (e) {
        failure = { code: e.code, message: e.message };
      }
      rerender();
    };
    rerender();
    refresh();
    return;
  }

  // ---------------------------------------------------------------- order checkout
  let state = null;
  let picked = null; // the token chosen, while its wallet is being chosen
  let creating = false;
  let skew = 0; // server clock − browser clock, seconds
  let tick = null;
  let transport = 'live';
  let fatal = null;
  const merchantName = () => (state ? state.merchant.name : boot.merchant || '');

  // Live status events seen so far: a state read that started before the latest one is stale (it could
  // show "awaiting payment" after "paid") and is read again instead of shown.
  let liveEvents = 0;
  /** The status `state.order.return_url` was made for. */
  let returnFor = null;
  const returnUrl = () => (state && state.order.status === returnFor ? state.order.return_url : null);
  async function loadState() {
    const seen = liveEvents;
    const r = await fetch('/checkout/' + encodeURIComponent(boot.orderId) + '/state', {
      headers: { 'x-checkout-key': key },
      credentials: 'omit',
      cache: 'no-store',
    });
    const j = await r.json();
    if (seen !== liveEvents) return loadState();
    if (j.status_code >= 400) {
      fatal = { code: j.data && j.data.code, message: j.message };
      stopAll();
      rerender();
      return;
    }
    state = j.data;
    // the way back is the server's for the status it read (success_url or cancel_url, naming that
    // status): a status a live event set since is shown at once, its way back once the state is read
    returnFor = state.order.status;
    skew = state.now - Date.now() / 1000;
    rerender();
  }
  let refreshing = null;
  const refresh = () => {
    if (!refreshing)
      refreshing = loadState()
        .catch(() => announce(S().errors.network))
        .finally(() => (refreshing = null));
    return refreshing;
  };

  const isOpen = () => state && (state.order.status === 'Created' || state.order.status === 'Processing') && state.order.expired_at > Date.now() / 1000 + skew;

  // The shopper picked a token, then a wallet application that can pay it: one request for the QR.
  async function choose(tok, walletType) {
    creating = true;
    rerender();
    const req = { merchant_id: state.order.merchant_id, transactionID: state.order.order_no, tokenAddress: tok.token_address, network: tok.network };
    try {
      await api('/merchant/fiat/checkOrderRate', req);
      await api('/pgqr/fiat/create', Object.assign({ walletType }, req));
      picked = null;
      await refresh();
      const qr = document.getElementById('qr');
      if (qr) document.getElementById('amount-value').focus();
    } catch (e) {
      announce(e.message);
      const err = document.getElementById('choose-error');
      if (err) err.textContent = e.message;
    } finally {
      creating = false;
      rerender();
    }
  }

  const header = (status) =>
    h(
      'section',
      { class: 'card' },
      h('h1', { id: 'order-no', text: t('order', state.order.order_no) }),
      state.link ? h('p', { class: 'big', text: state.link.title }) : null,
      h('div', { class: 'row' }, h('span', { text: S().orderAmount }), h('span', { class: 'big', id: 'order-amount', text: idr(state.order.amount) })),
      h('p', { class: 'muted', id: 'status', text: t('statusNow', S().status[status] || status) }),
    );

  const stepsBar = (i) =>
    h(
      'ol',
      { class: 'steps', 'aria-label': 'progress' },
      S().steps.map((s, n) => h('li', { 'aria-current': n === i ? 'step' : null, text: s })),
    );

  function countdown() {
    const left = Math.max(0, Math.round(state.order.expired_at - (Date.now() / 1000 + skew)));
    const mm = String(Math.floor(left / 60)).padStart(2, '0');
    const ss = String(left % 60).padStart(2, '0');
    return { left, text: mm + ':' + ss };
  }

  function qrImage(dep, amount) {
    return h('img', {
      class: 'qr',
      id: 'qr',
      src: 'data:image/svg+xml;charset=utf-8,' + encodeURIComponent(dep.qr_svg),
      alt: t('qrAlt', amount, dep.token_symbol, dep.address),
    });
  }

  function walletButtons(dep) {
    if (!dep.wallets.length) return null;
    return h(
      'div',
      {},
      h('p', { class: 'muted', text: S().walletsHelp }),
      h(
        'div',
        { class: 'wallets' },
        dep.wallets.map((w) => h('a', { class: 'btn secondary', href: w.uri, rel: 'noreferrer', text: t('openIn', WALLET_NAMES[w.wallet] || w.wallet) })),
      ),
    );
  }

  function returnButton() {
    const url = returnUrl();
    if (!url) return null;
    return h('a', { class: 'btn', id: 'return', href: url, rel: 'noreferrer', text: t('returnTo', merchantName()) });
  }

  function chooseScreen() {
    const pick = (tok) => () => {
      picked = tok;
      rerender();
      const first = document.querySelector('.choice');
      if (first) first.focus();
    };
    const cards = picked
      ? picked.wallets.map((w) =>
          h(
            'button',
            { type: 'button', class: 'choice', id: 'wallet-' + w, disabled: creating, onclick: () => choose(picked, w) },
            h('strong', { text: WALLET_NAMES[w] || w }),
          ),
        )
      : state.choices.map((tok, i) =>
          h(
            'button',
            { type: 'button', class: 'choice', id: 'choice-' + i, disabled: creating, onclick: pick(tok) },
            h('strong', { text: tok.symbol }),
            h('span', { text: t('on', tok.network_name) }),
          ),
        );
    const title = picked ? S().walletTitle : S().chooseTitle;
    return h(
      'section',
      { class: 'card' },
      stepsBar(0),
      h('h2', { id: picked ? 'wallet-title' : null, text: title }),
      h('p', { class: 'muted', text: picked ? t('walletHelp', picked.symbol, picked.network_name) : S().chooseHelp }),
      h('div', { class: 'choices', role: 'group', 'aria-label': title }, cards),
      picked && !creating
        ? h('button', { type: 'button', class: 'secondary', id: 'change-token', onclick: () => ((picked = null), rerender()), text: S().changeToken })
        : null,
      creating ? h('p', { class: 'muted', text: S().preparing }) : null,
      h('p', { class: 'error', id: 'choose-error', role: 'alert' }),
      returnButton(),
    );
  }

  function payScreen(dep) {
    const partial = Number(dep.received) > 0;
    const amount = partial ? dep.remaining : dep.total_amount;
    const cd = countdown();
    const nodes = [stepsBar(1), h('h2', { text: S().payTitle })];
    if (partial) {
      nodes.push(
        h(
          'div',
          { class: 'notice', id: 'partial' },
          h('p', { text: t('received', dep.received + ' ' + dep.token_symbol, dep.total_amount + ' ' + dep.token_symbol) }),
          h('p', { text: t('remainder', dep.remaining + ' ' + dep.token_symbol) }),
        ),
      );
    }
    nodes.push(
      h('p', { class: 'muted', text: S().sendExactly }),
      h(
        'div',
        { class: 'row' },
        h('span', { class: 'big mono', id: 'amount-value', tabindex: '-1' }, amount + ' ' + dep.token_symbol),
        copyButton('copy-amount', amount, S().copyAmount, S().copiedAmount),
      ),
      h('p', { class: 'muted', text: t('toAddress', dep.network_name) }),
      h(
        'div',
        { class: 'row' },
        h('span', { class: 'mono', id: 'address', text: dep.address }),
        copyButton('copy-address', dep.address, S().copyAddress, S().copiedAddress),
      ),
      qrImage(dep, amount),
      walletButtons(dep),
      h('p', { class: 'muted', id: 'unique-code', text: t('uniqueCode', dep.unique_code_amount + ' ' + dep.token_symbol, dep.unique_code) }),
      h(
        'dl',
        {},
        h('dt', { text: S().total }),
        h('dd', { id: 'idr-equivalent', text: t('idrEquivalent', idr(dep.total_amount_fiat)) + idrParts(dep) }),
        h('dt', { text: S().network }),
        h('dd', { text: dep.network_name }),
        h('dt', { text: '' }),
        h('dd', { id: 'rate', text: t('rate', dep.token_symbol, idr(dep.rate)) }),
        h('dt', { text: '' }),
        h('dd', { id: 'fee', text: t('fee', idr(dep.fee_idr), dep.fee_included ? S().feeIncluded : S().feeAdded) }),
      ),
      h('p', { class: 'notice', id: 'exchange-warning', text: S().exchangeWarning }),
      h(
        'p',
        { class: 'row' },
        h('span', { text: S().timeLeft }),
        h('span', { class: 'timer' + (cd.left < 300 ? ' warn' : ''), id: 'countdown', role: 'timer', 'aria-label': S().timeLeft, text: cd.text }),
      ),
      cd.left < 300 ? h('p', { class: 'warn', id: 'hurry', text: S().hurry }) : null,
      h('p', { class: 'muted', text: t('expiresAt', time(state.order.expired_at)) }),
    );
    return h('section', { class: 'card' }, nodes);
  }

  /** Why the IDR equivalent differs from the order amount: " (order 250,000 + fee … + unique code 3)". */
  function idrParts(dep) {
    const parts = [
      Number(dep.fee_added_idr) > 0 && t('partFee', idr(dep.fee_added_idr)),
      Number(dep.unique_code_idr) > 0 && t('partCode', idr(dep.unique_code_idr)),
    ].filter(Boolean);
    return parts.length ? ' (' + [t('partOrder', idr(state.order.amount))].concat(parts).join(' + ') + ')' : '';
  }

  function txLink(p) {
    return p.explorer_url ? h('a', { href: p.explorer_url, rel: 'noreferrer', target: '_blank', text: S().viewTx }) : null;
  }

  // `pending` may be empty for a moment: the live status said Processing before the state read shows the transfer.
  function confirmingScreen(pending) {
    const p = pending[pending.length - 1];
    return h(
      'section',
      { class: 'card' },
      stepsBar(2),
      h('h2', { id: 'detected', text: S().detectedTitle }),
      p ? h('p', { class: 'big', text: p.amount + ' ' + p.token_symbol }) : null,
      p ? h('p', { id: 'confirmations', text: t('confirming', p.confirmations, p.confirmations_needed) }) : null,
      p ? h('p', { class: 'mono muted', text: p.tx_hash }) : null,
      p ? txLink(p) : null,
      h('p', { class: 'muted', text: S().confirmingHelp }),
    );
  }

  function paidScreen() {
    const confirmed = state.payments.filter((p) => p.status === 'confirmed');
    const last = confirmed[confirmed.length - 1];
    const sum = confirmed.reduce((s, p) => s + Number(p.amount), 0);
    const token = last ? last.token_symbol : '';
    return h(
      'section',
      { class: 'card state-ok' },
      stepsBar(3),
      h('h2', { class: 'ok', id: 'paid', text: S().paidTitle }),
      h('p', { text: t('paidHelp', merchantName()) }),
      h('h3', { text: S().receipt }),
      h(
        'dl',
        { id: 'receipt' },
        h('dt', { text: S().amountIdr }),
        h('dd', { text: idr(state.order.amount) }),
        h('dt', { text: S().amountToken }),
        h('dd', { text: String(Number(sum.toFixed(18))) + ' ' + token }),
        h('dt', { text: S().network }),
        h('dd', { text: last ? last.network_name : '' }),
        h('dt', { text: S().txHash }),
        h(
          'dd',
          { class: 'mono' },
          confirmed.map((p) => h('span', { style: null }, p.tx_hash, ' ', txLink(p))),
        ),
        h('dt', { text: S().paidAt }),
        h('dd', { text: state.order.paid_at ? dateTime(state.order.paid_at) : '' }),
      ),
      confirmed.some((p) => p.late) ? h('p', { class: 'muted', text: S().lateNote }) : null,
      state.order.overpaid ? h('p', { class: 'notice', text: t('overpaid', merchantName()) }) : null,
      h('p', {}, h('a', { id: 'print-receipt', href: location.pathname + '/receipt' + location.search, text: S().printReceipt })),
      returnButton(),
    );
  }

  function expiredScreen() {
    const inLate = state.order.late_until > Date.now() / 1000 + skew;
    return h(
      'section',
      { class: 'card state-bad' },
      h('h2', { id: 'expired', text: S().expiredTitle }),
      h('p', { text: S().expiredHelp }),
      inLate && state.deposits.length ? h('p', { class: 'muted', text: t('expiredLate', dateTime(state.order.late_until)) }) : null,
      h('p', { text: t('expiredAgain', merchantName()) }),
      returnButton(),
    );
  }

  function underpaidScreen(dep) {
    return h(
      'section',
      { class: 'card state-bad' },
      h('h2', { id: 'underpaid', text: S().underpaidTitle }),
      h('p', { text: S().underpaidHelp }),
      h('p', { id: 'partial', text: t('received', dep.received + ' ' + dep.token_symbol, dep.total_amount + ' ' + dep.token_symbol) }),
      h('p', { text: t('underpaidTopUp', dep.remaining + ' ' + dep.token_symbol, dateTime(state.order.late_until), merchantName()) }),
      h(
        'div',
        { class: 'row' },
        h('span', { class: 'big mono', id: 'amount-value', tabindex: '-1' }, dep.remaining + ' ' + dep.token_symbol),
        copyButton('copy-amount', dep.remaining, S().copyAmount, S().copiedAmount),
      ),
      h(
        'div',
        { class: 'row' },
        h('span', { class: 'mono', id: 'address', text: dep.address }),
        copyButton('copy-address', dep.address, S().copyAddress, S().copiedAddress),
      ),
      qrImage(dep, dep.remaining),
      walletButtons(dep),
      returnButton(),
    );
  }

  let redirectTimer = null;
  let lastStatusSaid = '';
  function maybeRedirect() {
    if (!state || state.order.status !== 'Success' || !returnUrl() || !state.order.auto_redirect || redirectTimer) return;
    let n = 5;
    redirectTimer = setInterval(() => {
      n -= 1;
      announce(t('redirecting', merchantName(), n));
      if (n <= 0) {
        clearInterval(redirectTimer);
        const url = returnUrl();
        if (url) location.assign(url);
      }
    }, 1000);
  }

  rerender = () => {
    if (fatal) return errorScreen(fatal.code, fatal.message);
    if (!state) return show(h('p', { class: 'muted', text: S().loading }));
    const status = state.order.status;
    const dep = state.deposits[state.deposits.length - 1];
    const pending = state.payments.filter((p) => p.status === 'pending');
    let body;
    if (status === 'Success') body = paidScreen();
    // A payment seen (live status) hides the QR at once, before the state read brings the transfer's details.
    else if (pending.length || (status === 'Processing' && dep && Number(dep.received) === 0)) body = confirmingScreen(pending);
    else if (status === 'Underpaid' && dep) body = underpaidScreen(dep);
    else if (status === 'Expired' || !isOpen()) body = expiredScreen();
    else if (!dep) body = chooseScreen();
    else body = payScreen(dep);
    document.title = t('order', state.order.order_no) + ' · ' + merchantName();
    show(header(status), body, h('p', { class: 'muted', id: 'transport', text: transport === 'live' ? S().live : S().polling }));
    // Announce a status only when it changes: a re-render must not talk over a copy confirmation.
    const said = status + (pending.length ? '+pending' : '');
    if (said !== lastStatusSaid) {
      lastStatusSaid = said;
      announce(t('statusNow', S().status[status] || status) + (pending.length ? ' · ' + S().detectedTitle : ''));
    }
    maybeRedirect();
  };

  // The countdown only: a light repaint of one node each second, not a re-render (focus and selection stay).
  tick = setInterval(() => {
    const el = document.getElementById('countdown');
    if (!el || !state) return;
    const cd = countdown();
    el.textContent = cd.text;
    if (cd.left < 300 && !el.classList.contains('warn')) {
      el.classList.add('warn');
      announce(S().hurry);
    }
    if (cd.left === 0) refresh();
  }, 1000);

  // Live status over graphql-ws; every update re-reads the page's state (received amounts, confirmations).
  let poll = null;
  let client = null;
  function startPolling() {
    transport = 'poll';
    if (!poll) poll = setInterval(refresh, 3000);
    rerender();
  }
  function stopAll() {
    if (poll) clearInterval(poll);
    if (tick) clearInterval(tick);
    if (client) client.dispose();
    poll = null;
  }
  // Partial receipts and confirmation counts do not change the order's status, so no event carries
  // them: while a payment can still arrive, the page also re-reads its state every few seconds.
  setInterval(() => {
    if (!fatal && state && state.order.status !== 'Success' && state.order.late_until > Date.now() / 1000 + skew && transport === 'live') refresh();
  }, 4000);

  refresh().then(() => {
    if (fatal || !state) return;
    try {
      const wsUrl = (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/graphql';
      client = graphqlWs.createClient({ url: wsUrl, connectionParams: { key }, retryAttempts: 3, lazy: false });
      client.subscribe(
        { query: 'subscription($orderNo: String!) { orderUpdated(orderNo: $orderNo) { status } }', variables: { orderNo: state.order.order_no } },
        {
          next: (msg) => {
            liveEvents += 1;
            if (msg.data && msg.data.orderUpdated && state.order.status !== msg.data.orderUpdated.status) {
              state.order.status = msg.data.orderUpdated.status;
              rerender();
            }
            refresh();
          },
          // Socket refused, key expired mid-way, server gone: REST keeps the page honest.
          error: () => startPolling(),
          complete: () => startPolling(),
        },
      );
    } catch {
      startPolling();
    }
  });
})();
