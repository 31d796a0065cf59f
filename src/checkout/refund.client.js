/* global document, location, history, fetch, setTimeout, clearTimeout, URLSearchParams */
/*
 * The customer's refund claim page, in their browser. Served as a static file (the page's CSP allows no
 * inline script). Every text reaches the DOM through textContent or attributes, never innerHTML, so a
 * merchant's reason or a typed address can never become markup. The claim token is read from the URL's
 * fragment and sent only in a header or the POST body.
 */
'use strict';
(function () {
  const boot = JSON.parse(document.getElementById('boot').textContent);
  const params = new URLSearchParams(location.search);
  const token = new URLSearchParams(location.hash.replace(/^#/, '')).get('token') || '';

  const STRINGS = {
    id: {
      switchTo: 'English',
      switchLabel: 'Switch to English',
      loading: 'Memuat…',
      title: 'Pengembalian dana',
      from: 'dari {0}',
      steps: ['Alamat', 'Konfirmasi', 'Status'],
      amount: 'Jumlah',
      token: 'Token',
      network: 'Jaringan',
      order: 'Pesanan',
      reason: 'Alasan',
      feeTank: 'Biaya jaringan ditanggung {0}.',
      feeDeduct: 'Biaya jaringan dipotong dari jumlah ini.',
      addressLabel: 'Alamat dompet {0} Anda di jaringan {1}',
      addressHelp:
        'Tempel alamat dompet milik Anda sendiri yang dapat menerima {0} di jaringan {1}. Jangan gunakan alamat bursa (exchange) yang tidak mendukung jaringan ini.',
      next: 'Lanjut',
      confirmTitle: 'Periksa alamat Anda',
      confirmHelp: 'Dana akan dikirim ke alamat ini di jaringan {0}. Pengiriman tidak dapat dibatalkan: periksa setiap karakter.',
      confirmLabel: 'Ketik atau tempel alamat yang sama sekali lagi',
      back: 'Ubah alamat',
      submit: 'Kirim ke alamat ini',
      sending: 'Mengirim…',
      empty: 'Masukkan alamat dompet Anda.',
      mismatch: 'Kedua alamat berbeda. Ketik alamat yang sama dua kali.',
      statusTitle: 'Status pengembalian dana',
      toAddress: 'Ke alamat',
      txHash: 'Hash transaksi',
      sent: 'Dikirim',
      viewTx: 'Lihat transaksi',
      updates: 'Halaman ini diperbarui otomatis.',
      status: {
        requested: 'Menunggu alamat Anda',
        claimed: 'Alamat diterima',
        approved: 'Disetujui',
        sending: 'Sedang dikirim',
        confirmed: 'Terkirim',
        cancelled: 'Dibatalkan',
        failed: 'Gagal',
      },
      statusHelp: {
        claimed: 'Alamat Anda sudah tercatat. {0} akan meninjau dan menyetujui pengembalian dana ini.',
        approved: 'Pengembalian dana disetujui dan akan segera dikirim.',
        sending: 'Transaksi sedang dikirim dan menunggu konfirmasi jaringan.',
        confirmed: 'Dana sudah tiba di alamat Anda.',
        cancelled: 'Pengembalian dana ini dibatalkan oleh {0}. Hubungi {0} jika ada pertanyaan.',
        failed: 'Pengembalian dana ini tidak dapat dikirim. Hubungi {0}.',
      },
      errTitle: 'Halaman tidak dapat dibuka',
      errors: {
        CLAIM_NOT_FOUND: 'Tautan pengembalian dana ini tidak valid atau sudah tidak berlaku. Periksa bahwa Anda membuka tautan lengkap dari penjual.',
        REFUND_STATE: 'Pengembalian dana ini sudah memiliki alamat; alamat lain tidak dapat diterima.',
        RATE_LIMITED: 'Terlalu banyak percobaan. Tunggu sebentar lalu coba lagi.',
        VALIDATION_FAILED: 'Data yang dikirim tidak valid. Periksa alamat lalu coba lagi.',
        network: 'Koneksi terputus. Coba lagi.',
      },
      refused: {
        format: 'Ini bukan alamat {0} yang valid. Periksa bahwa Anda menyalin alamat lengkap untuk jaringan {0}.',
        ours: 'Alamat ini milik gateway pembayaran (alamat deposit atau biaya), bukan dompet Anda. Masukkan alamat dompet Anda sendiri.',
        contract: 'Alamat ini adalah smart contract. Masukkan alamat dompet yang Anda kendalikan.',
      },
    },
    en: {
      switchTo: 'Bahasa Indonesia',
      switchLabel: 'Ganti ke Bahasa Indonesia',
      loading: 'Loading…',
      title: 'Refund',
      from: 'from {0}',
      steps: ['Address', 'Confirm', 'Status'],
      amount: 'Amount',
      token: 'Token',
      network: 'Network',
      order: 'Order',
      reason: 'Reason',
      feeTank: 'The network fee is paid by {0}.',
      feeDeduct: 'The network fee is deducted from this amount.',
      addressLabel: 'Your {0} wallet address on {1}',
      addressHelp:
        'Paste an address of your own wallet that can receive {0} on the {1} network. Do not use an exchange address that does not support this network.',
      next: 'Continue',
      confirmTitle: 'Check your address',
      confirmHelp: 'The refund will be sent to this address on {0}. A transfer cannot be undone: check every character.',
      confirmLabel: 'Type or paste the same address once more',
      back: 'Change address',
      submit: 'Send to this address',
      sending: 'Sending…',
      empty: 'Enter your wallet address.',
      mismatch: 'The two addresses differ. Type the same address twice.',
      statusTitle: 'Refund status',
      toAddress: 'To address',
      txHash: 'Transaction hash',
      sent: 'Sent',
      viewTx: 'View transaction',
      updates: 'This page updates by itself.',
      status: {
        requested: 'Waiting for your address',
        claimed: 'Address received',
        approved: 'Approved',
        sending: 'Sending',
        confirmed: 'Sent',
        cancelled: 'Cancelled',
        failed: 'Failed',
      },
      statusHelp: {
        claimed: 'Your address is recorded. {0} will review and approve this refund.',
        approved: 'The refund is approved and will be sent shortly.',
        sending: 'The transaction is on its way and waiting for network confirmations.',
        confirmed: 'The refund has arrived at your address.',
        cancelled: 'This refund was cancelled by {0}. Contact {0} with any questions.',
        failed: 'This refund could not be sent. Contact {0}.',
      },
      errTitle: 'This page cannot be opened',
      errors: {
        CLAIM_NOT_FOUND: 'This refund link is not valid or no longer works. Check that you opened the complete link from the seller.',
        REFUND_STATE: 'This refund has its address already; no other address can be taken.',
        RATE_LIMITED: 'Too many attempts. Wait a moment and try again.',
        VALIDATION_FAILED: 'What was sent is not valid. Check the address and try again.',
        network: 'Connection lost. Try again.',
      },
      refused: {
        format: 'This is not a valid {0} address. Check that you copied the complete address for the {0} network.',
        ours: 'This address belongs to the payment gateway (a deposit or fee address), not to your wallet. Enter an address of your own wallet.',
        contract: 'This address is a smart contract. Enter the address of a wallet you control.',
      },
    },
  };

  let lang = boot.lang === 'en' ? 'en' : 'id';
  const S = () => STRINGS[lang];
  /** `{0}`… placeholders filled by split/join: no replacement patterns ($&, $') can apply. */
  const fmt = (s, ...args) => args.reduce((acc, v, i) => acc.split('{' + i + '}').join(String(v)), s);

  /** Builds an element; strings among `kids` become text nodes. */
  function h(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'text') e.textContent = v;
      else if (k === 'onclick') e.addEventListener('click', v);
      else if (k === 'onsubmit') e.addEventListener('submit', v);
      else if (k === 'value') e.value = v;
      else e.setAttribute(k, v === true ? '' : v);
    }
    for (const kid of kids.flat(Infinity))
      if (kid !== null && kid !== undefined && kid !== false) e.append(typeof kid === 'string' ? document.createTextNode(kid) : kid);
    return e;
  }
  const view = document.getElementById('view');
  const live = document.getElementById('live');
  const announce = (msg) => {
    if (live.textContent !== msg) live.textContent = msg;
  };
  function show(...nodes) {
    const focused = document.activeElement && document.activeElement.id;
    view.replaceChildren(...nodes);
    // Re-rendering (a status poll, a language switch) must not steal the keyboard user's place.
    if (focused) {
      const again = document.getElementById(focused);
      if (again) again.focus();
    }
  }

  // State of the page: the refund as last read, the step, the typed addresses, the last error.
  let refund = null;
  let failure = null;
  let step = 'address';
  let address = '';
  let confirmAddress = '';
  let fieldError = null;
  let busy = false;
  let poll = null;

  const langBtn = document.getElementById('lang');
  function paintLang() {
    document.documentElement.lang = lang;
    langBtn.textContent = S().switchTo;
    langBtn.setAttribute('aria-label', S().switchLabel);
    langBtn.setAttribute('lang', lang === 'id' ? 'en' : 'id');
  }
  langBtn.addEventListener('click', () => {
    // Typed text survives the switch.
    const a = document.getElementById('address');
    if (a) address = a.value;
    const c = document.getElementById('confirm-address');
    if (c) confirmAddress = c.value;
    lang = lang === 'id' ? 'en' : 'id';
    params.set('lang', lang);
    // The fragment (the token) stays: a reload still opens the same refund.
    history.replaceState(null, '', location.pathname + '?' + params.toString() + location.hash);
    paintLang();
    render();
  });
  paintLang();

  async function call(method, body) {
    let r;
    try {
      r = await fetch('/refund/claim', {
        method,
        headers: method === 'GET' ? { 'x-claim-token': token } : { 'content-type': 'application/json' },
        body: body ? JSON.stringify(body) : undefined,
        credentials: 'omit',
        cache: 'no-store',
      });
    } catch {
      const err = new Error('network');
      err.code = 'network';
      throw err;
    }
    let j;
    try {
      j = await r.json();
    } catch {
      j = { status_code: r.status, message: 'network', data: { code: 'network' } };
    }
    if (j.status_code >= 400) {
      const err = new Error(j.message);
      err.code = (j.data && j.data.code) || 'network';
      err.data = j.data || {};
      throw err;
    }
    return j.data;
  }

  /** A refused or failed submission, as a sentence in the page's language. */
  function sentence(err) {
    if (!err) return null;
    if (err.code === 'REFUND_ADDRESS_REFUSED') {
      const why = S().refused[err.data && err.data.reason];
      return why ? fmt(why, refund ? refund.network_name : '') : err.message;
    }
    if (err.code === 'VALIDATION_FAILED' && err.data && JSON.stringify(err.data).includes('differ')) return S().mismatch;
    return S().errors[err.code] || err.message;
  }

  function summary() {
    const r = refund;
    const rows = [
      [S().amount, r.amount + ' ' + r.token_symbol, 'amount'],
      [S().network, r.network_name, 'network'],
      [S().order, r.order_no, 'order-no'],
    ];
    if (r.reason) rows.push([S().reason, r.reason, 'reason']);
    return h(
      'section',
      { class: 'card' },
      h('h1', { id: 'title', text: S().title }),
      h('p', { class: 'muted', text: fmt(S().from, r.merchant) }),
      h('p', { class: 'big', id: 'big-amount', text: r.amount + ' ' + r.token_symbol }),
      h(
        'dl',
        {},
        rows.map(([k, v, id]) => [h('dt', { text: k }), h('dd', { id, text: v })]),
      ),
      h('p', { class: 'muted', id: 'fee-note', text: r.fee_mode === 'deduct' ? S().feeDeduct : fmt(S().feeTank, r.merchant) }),
    );
  }

  function steps(current) {
    return h(
      'ol',
      { class: 'steps', 'aria-label': S().title },
      S().steps.map((s, i) => h('li', i === current ? { 'aria-current': 'step', text: s } : { text: s })),
    );
  }

  function errorLine(text) {
    return text ? h('p', { class: 'error', id: 'claim-error', role: 'alert', text }) : null;
  }

  function addressStep() {
    const r = refund;
    const input = h('input', {
      id: 'address',
      type: 'text',
      name: 'address',
      autocomplete: 'off',
      autocapitalize: 'off',
      spellcheck: 'false',
      inputmode: 'text',
      class: 'mono',
      'aria-describedby': 'address-help' + (fieldError ? ' claim-error' : ''),
      'aria-invalid': fieldError ? 'true' : null,
      value: address,
    });
    return h(
      'section',
      { class: 'card' },
      steps(0),
      h(
        'form',
        {
          id: 'address-form',
          novalidate: true,
          onsubmit: (ev) => {
            ev.preventDefault();
            address = input.value.trim();
            if (!address) {
              fieldError = S().empty;
            } else {
              fieldError = null;
              step = 'confirm';
              confirmAddress = '';
            }
            render();
            const next = document.getElementById(step === 'confirm' ? 'confirm-address' : 'address');
            if (next) next.focus();
          },
        },
        h('label', { for: 'address', text: fmt(S().addressLabel, r.token_symbol, r.network_name) }),
        input,
        h('p', { class: 'muted', id: 'address-help', text: fmt(S().addressHelp, r.token_symbol, r.network_name) }),
        errorLine(fieldError),
        h('p', { class: 'row' }, h('button', { type: 'submit', id: 'next', text: S().next })),
      ),
    );
  }

  function confirmStep() {
    const r = refund;
    const input = h('input', {
      id: 'confirm-address',
      type: 'text',
      name: 'confirm-address',
      autocomplete: 'off',
      autocapitalize: 'off',
      spellcheck: 'false',
      class: 'mono',
      'aria-describedby': fieldError ? 'claim-error' : null,
      'aria-invalid': fieldError ? 'true' : null,
      value: confirmAddress,
    });
    const submit = async (ev) => {
      ev.preventDefault();
      if (busy) return;
      confirmAddress = input.value.trim();
      if (confirmAddress !== address) {
        fieldError = S().mismatch;
        render();
        return;
      }
      busy = true;
      fieldError = null;
      render();
      try {
        refund = await call('POST', { token, address, confirm_address: confirmAddress });
        step = 'status';
        announce(S().status[refund.status]);
        watch();
      } catch (err) {
        fieldError = sentence(err);
        // A refused address goes back to where it is typed; anything else stays here.
        if (err.code === 'REFUND_ADDRESS_REFUSED') step = 'address';
        if (err.code === 'REFUND_STATE' || err.code === 'CLAIM_NOT_FOUND') await load();
      } finally {
        busy = false;
      }
      render();
    };
    return h(
      'section',
      { class: 'card' },
      steps(1),
      h('h2', { text: S().confirmTitle }),
      h('p', { text: fmt(S().confirmHelp, r.network_name) }),
      h('p', { class: 'big mono', id: 'confirm-shown', text: address }),
      h(
        'form',
        { id: 'confirm-form', novalidate: true, onsubmit: submit },
        h('label', { for: 'confirm-address', text: S().confirmLabel }),
        input,
        errorLine(fieldError),
        h(
          'p',
          { class: 'row' },
          h('button', {
            type: 'button',
            id: 'back',
            class: 'secondary',
            text: S().back,
            onclick: () => {
              fieldError = null;
              step = 'address';
              render();
            },
          }),
          h('button', { type: 'submit', id: 'submit', disabled: busy, text: busy ? S().sending : S().submit }),
        ),
      ),
    );
  }

  function statusCard() {
    const r = refund;
    const good = r.status === 'confirmed';
    const bad = r.status === 'cancelled' || r.status === 'failed';
    const help = S().statusHelp[r.status];
    const rows = [];
    if (r.to_address) rows.push(h('dt', { text: S().toAddress }), h('dd', { class: 'mono', id: 'to-address', text: r.to_address }));
    if (r.sent_amount && r.sent_amount !== r.amount)
      rows.push(h('dt', { text: S().sent }), h('dd', { id: 'sent-amount', text: r.sent_amount + ' ' + r.token_symbol }));
    if (r.tx_hash) rows.push(h('dt', { text: S().txHash }), h('dd', { class: 'mono', id: 'tx-hash', text: r.tx_hash }));
    const done = good || bad;
    return h(
      'section',
      { class: 'card ' + (good ? 'state-ok' : bad ? 'state-bad' : ''), id: 'status-card', 'data-status': r.status },
      steps(2),
      h('h2', { text: S().statusTitle }),
      h('p', { class: 'big ' + (good ? 'ok' : bad ? 'error' : 'warn'), id: 'status', text: S().status[r.status] }),
      help ? h('p', { id: 'status-help', text: fmt(help, r.merchant) }) : null,
      rows.length ? h('dl', {}, rows) : null,
      r.explorer_url ? h('p', {}, h('a', { id: 'explorer', href: r.explorer_url, rel: 'noreferrer', target: '_blank', text: S().viewTx })) : null,
      done ? null : h('p', { class: 'muted', id: 'updates', text: S().updates }),
    );
  }

  function errorScreen(err) {
    show(
      h(
        'section',
        { class: 'card state-bad', role: 'alert' },
        h('h1', { text: S().errTitle }),
        h('p', { class: 'error', id: 'page-error', text: sentence(err) }),
      ),
    );
    document.title = S().errTitle;
  }

  function render() {
    if (failure) return errorScreen(failure);
    if (!refund) return show(h('p', { class: 'muted', text: S().loading }));
    document.getElementById('merchant').textContent = refund.merchant;
    document.title = S().title + ' · ' + refund.merchant;
    if (refund.open) {
      if (step === 'confirm') return show(summary(), confirmStep());
      return show(summary(), addressStep());
    }
    return show(summary(), statusCard());
  }

  async function load() {
    try {
      refund = await call('GET');
      failure = null;
    } catch (err) {
      // A passing connection failure keeps what is shown; a refused link replaces it.
      if (err.code !== 'network' && err.code !== 'RATE_LIMITED') failure = err;
      else if (!refund) failure = err;
    }
  }

  /** Re-reads the refund every few seconds until it is final (confirmed, cancelled, failed). */
  function watch() {
    if (poll) clearTimeout(poll);
    if (!refund || refund.open || ['confirmed', 'cancelled', 'failed'].includes(refund.status)) return;
    poll = setTimeout(async () => {
      const before = refund.status;
      await load();
      if (refund && refund.status !== before) announce(S().status[refund.status]);
      render();
      watch();
    }, 4000);
  }

  (async () => {
    if (!token) {
      failure = { code: 'CLAIM_NOT_FOUND', message: '' };
      return render();
    }
    render();
    await load();
    render();
    watch();
  })();
})();
