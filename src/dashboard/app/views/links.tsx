import { useState } from 'preact/hooks';
import { gql } from '../api';
import { CreatePaymentLinkDocument, PaymentLinksDocument, UpdatePaymentLinkDocument } from '../documents';
import { idr, when } from '../i18n';
import { Qr } from '../qr';
import { Copy, Empty, ErrorLine, Show, useAction, useApp, useLoad } from '../ui';

/** Payment links: create (one product line, usage limit, validity), list, edit (title, validity), (de)activate, copy the link, its QR. */
export function Links() {
  const { t, env, lang } = useApp();
  const [links, reload] = useLoad(() => gql(PaymentLinksDocument, { environment: env, first: 50 }), [env]);
  const [qr, setQr] = useState<string | null>(null);
  const [form, setForm] = useState({ title: '', product: '', price: '', quantity: '1', maxUsage: '10', minutes: '1440' });
  const action = useAction();
  const field = (k: keyof typeof form) => (e: Event) => setForm({ ...form, [k]: (e.currentTarget as HTMLInputElement).value });

  const create = (e: Event) => {
    e.preventDefault();
    void action.run(async () => {
      await gql(CreatePaymentLinkDocument, {
        environment: env,
        input: {
          title: form.title,
          products: [{ name: form.product || form.title, price: form.price, quantity: Number(form.quantity) }],
          maxUsage: Number(form.maxUsage),
          expirationTime: Number(form.minutes) * 60,
        },
      });
      setForm({ ...form, title: '', product: '', price: '' });
      reload();
    });
  };
  const [editing, setEditing] = useState<string | null>(null);
  // A new validity restarts the window from now, so it is sent only when it changed.
  const saveEdit = (id: string, seconds: number) => (e: Event) => {
    e.preventDefault();
    const f = new FormData(e.currentTarget as HTMLFormElement);
    const expirationTime = Number(f.get('minutes')) * 60;
    void action.run(async () => {
      await gql(UpdatePaymentLinkDocument, {
        environment: env,
        input: { id, title: String(f.get('title')), expirationTime: expirationTime === seconds ? undefined : expirationTime },
      });
      setEditing(null);
      reload();
    });
  };
  const setStatus = (id: string, status: 'ACTIVE' | 'INACTIVE') =>
    void action.run(async () => (await gql(UpdatePaymentLinkDocument, { environment: env, input: { id, status } }), reload()));

  return (
    <section>
      <h1>{t.links}</h1>
      <form class="card grid" id="new-link" onSubmit={create}>
        <h2>{t.newLink}</h2>
        <label>
          {t.linkTitle}
          <input id="link-title" required value={form.title} onInput={field('title')} />
        </label>
        <label>
          {t.product}
          <input id="link-product" value={form.product} onInput={field('product')} />
        </label>
        <label>
          {t.price}
          <input id="link-price" inputMode="numeric" required pattern="[0-9]+" value={form.price} onInput={field('price')} />
        </label>
        <label>
          {t.quantity}
          <input id="link-quantity" type="number" min="1" required value={form.quantity} onInput={field('quantity')} />
        </label>
        <label>
          {t.maxUsage}
          <input id="link-max-usage" type="number" min="1" required value={form.maxUsage} onInput={field('maxUsage')} />
        </label>
        <label>
          {t.expiryMinutes}
          <input id="link-minutes" type="number" min="1" required value={form.minutes} onInput={field('minutes')} />
        </label>
        <button type="submit" id="link-create" disabled={action.busy}>
          {t.create}
        </button>
      </form>
      <ErrorLine error={action.error} />
      <Show value={links} retry={reload}>
        {({ paymentLinks }) =>
          paymentLinks.edges.length === 0 ? (
            <Empty />
          ) : (
            <ul class="cards" id="links">
              {paymentLinks.edges.map(({ node: l }) => (
                <li class="card" data-link={l.id}>
                  <strong>{l.title}</strong> <span class={`status s-${l.status}`}>{l.status}</span>
                  <p>
                    {idr(l.totalPrice, lang)} · {t.used} {l.usageCount}/{l.maxUsage} · {when(l.expiresAt, lang)}
                  </p>
                  <p class="row">
                    <a class="link-url mono" href={l.link} target="_blank" rel="noreferrer">
                      {l.link}
                    </a>
                    <Copy text={l.link} />
                    <button type="button" class="secondary small qr-toggle" aria-expanded={qr === l.id} onClick={() => setQr(qr === l.id ? null : l.id)}>
                      QR
                    </button>
                    {l.status === 'ACTIVE' ? (
                      <button type="button" class="secondary small" onClick={() => setStatus(l.id, 'INACTIVE')}>
                        {t.deactivate}
                      </button>
                    ) : (
                      <button type="button" class="secondary small" onClick={() => setStatus(l.id, 'ACTIVE')}>
                        {t.activate}
                      </button>
                    )}
                  </p>
                  {editing === l.id ? (
                    <form class="grid edit-link" onSubmit={saveEdit(l.id, Math.round(l.expirationTime / 60) * 60)}>
                      <label>
                        {t.linkTitle}
                        <input name="title" required defaultValue={l.title} />
                      </label>
                      <label>
                        {t.expiryMinutes}
                        <input name="minutes" type="number" min="1" required defaultValue={String(Math.round(l.expirationTime / 60))} />
                      </label>
                      <button type="submit">{t.save}</button>
                    </form>
                  ) : (
                    <button type="button" class="link edit-toggle" onClick={() => setEditing(l.id)}>
                      {t.edit}
                    </button>
                  )}
                  {qr === l.id && <Qr text={l.link} id={`qr-${l.id}`} label={`QR: ${l.link}`} />}
                </li>
              ))}
            </ul>
          )
        }
      </Show>
    </section>
  );
}
