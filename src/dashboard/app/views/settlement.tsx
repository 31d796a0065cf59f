import { useEffect, useState } from 'preact/hooks';
import { gql } from '../api';
import { SetSettlementWalletDocument, SettlementDocument, SweepNowDocument, type Network } from '../documents';
import { when } from '../i18n';
import { Empty, ErrorLine, NETWORKS, Show, useAction, useApp, useLoad } from '../ui';
import { SweepSchedule } from './sweep-schedule';

/** Time left until `iso`, as h:mm:ss, ticking. */
function Countdown({ until }: { until: string }) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const i = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(i);
  }, []);
  const s = Math.max(0, Math.round((new Date(until).getTime() - now) / 1000));
  return <span class="mono">{`${Math.floor(s / 3600)}:${String(Math.floor(s / 60) % 60).padStart(2, '0')}:${String(s % 60).padStart(2, '0')}`}</span>;
}

/** Settlement wallets per network (a change waits out its hold), balances, sweep now, the schedule, sweep history. */
export function Settlement() {
  const { t, env, lang } = useApp();
  const [data, reload] = useLoad(() => gql(SettlementDocument, { environment: env }), [env]);
  const [network, setNetwork] = useState<Network>('BINANCE');
  const [address, setAddress] = useState('');
  const [password, setPassword] = useState('');
  const [requested, setRequested] = useState(false);
  const action = useAction();

  const save = (e: Event) => {
    e.preventDefault();
    void action.run(async () => {
      await gql(SetSettlementWalletDocument, { environment: env, network, address: address.trim(), password });
      setPassword('');
      reload();
    });
  };
  const sweep = () =>
    void action.run(async () => {
      await gql(SweepNowDocument, { environment: env });
      setRequested(true);
      reload();
    });

  return (
    <section>
      <h1>{t.settlement}</h1>
      <ErrorLine error={action.error} />
      <Show value={data} retry={reload}>
        {(d) => (
          <>
            <h2>{t.wallets}</h2>
            <table class="list" id="wallets">
              <tbody>
                {NETWORKS.map((n) => {
                  const w = d.settlementWallets.find((x) => x.network === n);
                  return (
                    <tr data-network={n}>
                      <td>{n}</td>
                      <td class="mono">{w?.current?.address ?? '—'}</td>
                      <td>
                        {w?.pending && (
                          <span class="badge warn">
                            {w.pending.address.slice(0, 10)}… {t.pendingUntil} <Countdown until={w.pending.activeFrom} />
                          </span>
                        )}
                      </td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
            <form class="card grid" id="wallet-form" onSubmit={save}>
              <select id="wallet-network" value={network} onChange={(e) => setNetwork(e.currentTarget.value as Network)}>
                {NETWORKS.map((n) => (
                  <option value={n}>{n}</option>
                ))}
              </select>
              <label>
                {t.address}
                <input id="wallet-address" required class="mono" value={address} onInput={(e) => setAddress(e.currentTarget.value)} />
              </label>
              <label>
                {t.password}
                <input
                  id="wallet-password"
                  type="password"
                  autocomplete="current-password"
                  required
                  value={password}
                  onInput={(e) => setPassword(e.currentTarget.value)}
                />
              </label>
              <button type="submit" id="wallet-save" disabled={action.busy}>
                {t.setWallet}
              </button>
            </form>
            <h2>{t.balances}</h2>
            {d.sweepBalances.length === 0 ? (
              <Empty />
            ) : (
              <table class="list" id="balances">
                <thead>
                  <tr>
                    <th>{t.token}</th>
                    <th>{t.received}</th>
                    <th>{t.swept}</th>
                    <th>{t.waiting}</th>
                    <th>{t.held}</th>
                  </tr>
                </thead>
                <tbody>
                  {d.sweepBalances.map((b) => (
                    <tr>
                      <td>
                        {b.tokenSymbol} {b.network}
                      </td>
                      <td class="num">{b.received.decimal}</td>
                      <td class="num">{b.swept.decimal}</td>
                      <td class="num">{b.waiting.decimal}</td>
                      <td class="num">{b.held.decimal}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
            <p class="row">
              <button type="button" id="sweep-now" disabled={action.busy} onClick={sweep}>
                {t.sweepNow}
              </button>
              {requested && <span id="sweep-requested">{t.sweepRequested}</span>}
            </p>
            <SweepSchedule />
            <h2>{t.sweeps}</h2>
            {d.sweeps.edges.length === 0 ? (
              <Empty />
            ) : (
              <table class="list" id="sweeps">
                <tbody>
                  {d.sweeps.edges.map(({ node: s }) => (
                    <tr>
                      <td>
                        {s.amount?.decimal ?? '—'} {s.tokenSymbol} {s.network}
                      </td>
                      <td>{s.status}</td>
                      <td class="mono wide">{s.txHash ?? '—'}</td>
                      <td class="wide">{when(s.createdAt, lang)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </>
        )}
      </Show>
    </section>
  );
}
