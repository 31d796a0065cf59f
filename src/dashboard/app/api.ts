import { createClient, type Client } from 'graphql-ws';
import { RefreshDocument } from './documents';
import type { TypedDocumentString } from './generated/graphql';

/** A GraphQL error as the gateway sends it: a sentence and a stable `extensions.code`. */
export class GqlError extends Error {
  constructor(
    message: string,
    readonly code: string,
    readonly extensions: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

export interface Session {
  token: string;
  refreshToken: string;
  expiresAt: string;
}

const KEY = 'cpg.dashboard.session';

/**
 * The signed-in session. Kept for this tab only (sessionStorage): a reload stays signed in, closing the
 * tab forgets it. Rotated by `refreshToken` shortly before the access token expires and whenever an
 * answer says the token is no longer valid.
 */
let session: Session | null = read();
const listeners = new Set<(s: Session | null) => void>();
let refreshing: Promise<boolean> | null = null;

function read(): Session | null {
  try {
    const raw = sessionStorage.getItem(KEY);
    return raw ? (JSON.parse(raw) as Session) : null;
  } catch {
    return null;
  }
}

export function currentSession(): Session | null {
  return session;
}

export function setSession(s: Session | null): void {
  session = s;
  if (s) sessionStorage.setItem(KEY, JSON.stringify(s));
  else sessionStorage.removeItem(KEY);
  // A rotated token keeps the socket (its reconnects read the current token); signing out closes it.
  if (!s) resetSocket();
  for (const l of listeners) l(s);
}

export function onSession(l: (s: Session | null) => void): () => void {
  listeners.add(l);
  return () => listeners.delete(l);
}

interface Answer<T> {
  data?: T | null;
  errors?: { message: string; extensions?: Record<string, unknown> }[];
}

async function post<T>(query: string, variables: unknown, token: string | null): Promise<Answer<T>> {
  const res = await fetch('/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify({ query, variables }),
  });
  const type = res.headers.get('content-type') ?? '';
  if (!type.includes('json')) throw new GqlError(`HTTP ${res.status}`, 'NETWORK_ERROR');
  return (await res.json()) as Answer<T>;
}

const SESSION_ENDED = new Set(['INVALID_TOKEN', 'UNAUTHENTICATED', 'SESSION_REVOKED']);

/** Exchanges the refresh token for a new pair (once at a time); false when the session is over. */
export function refresh(): Promise<boolean> {
  if (!session) return Promise.resolve(false);
  refreshing ??= (async () => {
    try {
      const r = await post<{ refreshToken: Session }>(String(RefreshDocument), { refreshToken: session!.refreshToken }, null);
      if (r.data?.refreshToken) {
        setSession(r.data.refreshToken);
        return true;
      }
      setSession(null);
      return false;
    } catch {
      return false;
    } finally {
      refreshing = null;
    }
  })();
  return refreshing;
}

/** The merchant requires a second factor this user has not set up: everything else waits for it. */
const ENROLMENT_REQUIRED = 'SECOND_FACTOR_ENROLMENT_REQUIRED';
const ENROLMENT_ROUTE = '#/settings/two-factor';

/**
 * Runs a typed operation over HTTP with the session's access token. An expired token is refreshed
 * once and the operation retried; any other error is thrown as a GqlError with its code (and
 * SECOND_FACTOR_ENROLMENT_REQUIRED also opens Settings → Two-factor).
 */
export async function gql<T, V>(doc: TypedDocumentString<T, V>, variables?: V): Promise<T> {
  let answer = await post<T>(String(doc), variables ?? {}, session?.token ?? null);
  const code = String(answer.errors?.[0]?.extensions?.code ?? '');
  if (session && SESSION_ENDED.has(code) && (await refresh())) answer = await post<T>(String(doc), variables ?? {}, session?.token ?? null);
  const e = answer.errors?.[0];
  if (e?.extensions?.code === ENROLMENT_REQUIRED && location.hash !== ENROLMENT_ROUTE) location.hash = ENROLMENT_ROUTE;
  if (e) throw new GqlError(e.message, String(e.extensions?.code ?? 'ERROR'), e.extensions);
  return answer.data as T;
}

let socket: Client | null = null;
const socketListeners = new Set<(connected: boolean) => void>();

/** Hears whether the graphql-ws connection is up (true on each connect, false when it closes). */
export function onSocket(l: (connected: boolean) => void): () => void {
  socketListeners.add(l);
  return () => socketListeners.delete(l);
}
const tellSocket = (up: boolean) => socketListeners.forEach((l) => l(up));

function resetSocket(): void {
  const old = socket;
  socket = null;
  void old?.dispose();
}

/** The graphql-ws connection on the same origin, authenticated by the session; reconnects by itself. */
function ws(): Client {
  socket ??= createClient({
    url: `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/graphql`,
    connectionParams: () => (session ? { authorization: `Bearer ${session.token}` } : {}),
    retryAttempts: Infinity,
    shouldRetry: () => true,
    lazy: true,
    on: { connected: () => tellSocket(true), closed: () => tellSocket(false) },
  });
  return socket;
}

/** Subscribes to a typed subscription; returns the way to stop. Errors go to `onError` (never thrown). */
export function subscribe<T, V>(doc: TypedDocumentString<T, V>, variables: V, onData: (d: T) => void, onError: (e: unknown) => void = () => {}): () => void {
  return ws().subscribe<T>(
    { query: String(doc), variables: variables as Record<string, unknown> },
    {
      next: (r) => (r.data ? onData(r.data) : r.errors && onError(r.errors)),
      error: onError,
      complete: () => {},
    },
  );
}
