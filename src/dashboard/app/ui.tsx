import { createContext, type ComponentChildren } from 'preact';
import { useCallback, useContext, useEffect, useState } from 'preact/hooks';
import { GqlError } from './api';
import type { Environment } from './documents';
import { WORDS, type Lang, type Words } from './i18n';

export interface Ctx {
  lang: Lang;
  env: Environment;
  t: Words;
  go: (route: string) => void;
}

export const AppContext = createContext<Ctx>({ lang: 'id', env: 'SANDBOX', t: WORDS.id, go: () => {} });
export const useApp = () => useContext(AppContext);

export type Loaded<T> = { state: 'loading' } | { state: 'error'; error: string } | { state: 'ok'; data: T };

/** Loads `load()` whenever `deps` change; `reload` runs it again. Stale answers are dropped. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): [Loaded<T>, () => void, (d: T) => void] {
  const [result, setResult] = useState<Loaded<T>>({ state: 'loading' });
  const [n, setN] = useState(0);
  useEffect(() => {
    let live = true;
    setResult({ state: 'loading' });
    load().then(
      (data) => live && setResult({ state: 'ok', data }),
      (e: unknown) => live && setResult({ state: 'error', error: errorText(e) }),
    );
    return () => {
      live = false;
    };
  }, [...deps, n]);
  const reload = useCallback(() => setN((x) => x + 1), []);
  const set = useCallback((data: T) => setResult({ state: 'ok', data }), []);
  return [result, reload, set];
}

export const errorText = (e: unknown): string => (e instanceof GqlError ? `${e.message} (${e.code})` : e instanceof Error ? e.message : String(e));

/** The three states every screen has: loading, error with a retry, and the data. */
export function Show<T>({ value, retry, children }: { value: Loaded<T>; retry?: () => void; children: (data: T) => ComponentChildren }) {
  const { t } = useApp();
  if (value.state === 'loading')
    return (
      <p class="muted loading" role="status">
        {t.loading}
      </p>
    );
  if (value.state === 'error')
    return (
      <div class="error" role="alert">
        <p>
          {t.error}: {value.error}
        </p>
        {retry && (
          <button type="button" onClick={retry}>
            {t.retry}
          </button>
        )}
      </div>
    );
  return <>{children(value.data)}</>;
}

export const Empty = ({ text }: { text?: string }) => {
  const { t } = useApp();
  return <p class="empty muted">{text ?? t.empty}</p>;
};

/** Runs an action, remembering its error; `busy` while it runs. */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const run = useCallback(async (fn: () => Promise<unknown>) => {
    setBusy(true);
    setError(null);
    try {
      await fn();
      return true;
    } catch (e) {
      setError(errorText(e));
      return false;
    } finally {
      setBusy(false);
    }
  }, []);
  return { busy, error, run, setError };
}

export const ErrorLine = ({ error }: { error: string | null }) =>
  error ? (
    <p class="error" role="alert">
      {error}
    </p>
  ) : null;

export function Copy({ text, id }: { text: string; id?: string }) {
  const { t } = useApp();
  const [done, setDone] = useState(false);
  return (
    <button
      type="button"
      id={id}
      class="secondary small"
      onClick={() => {
        void navigator.clipboard?.writeText(text).then(
          () => setDone(true),
          () => {},
        );
      }}
    >
      {done ? t.copied : t.copy}
    </button>
  );
}

export const NETWORKS = ['ETHEREUM', 'BINANCE', 'TRON', 'SOLANA'] as const;
export const STATUSES = ['Created', 'Processing', 'Success', 'Underpaid', 'Expired'] as const;
