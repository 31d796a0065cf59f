import { Repeater } from '@graphql-yoga/subscription';
import type { DomainError } from '../common/errors.js';

/**
 * What a subscription stream yields once the credential it was opened with stops being valid (API key
 * rotated, checkout key expired, dashboard session revoked or expired). The subscription's field
 * resolver throws its error — the client gets one result with `errors[0].extensions.code`
 * (`INVALID_API_KEY`, `CHECKOUT_KEY_EXPIRED`, `SESSION_REVOKED`, …) — and the stream then completes.
 */
export class CredentialLapsed {
  constructor(readonly error: DomainError) {}
}

/** Field resolvers of subscriptions call this first: a lapse marker becomes the operation's error. */
export function throwIfLapsed<T>(root: T | CredentialLapsed): T {
  if (root instanceof CredentialLapsed) throw root.error;
  return root;
}

/**
 * One periodic check per credential, shared by every live subscription opened with it (10,000
 * dashboard tabs on one API key cost one check per interval, not 10,000): the first subscription
 * starts the timer, the last one stops it; a refusal reaches them all.
 */
class SharedRecheck {
  private readonly watchers = new Map<string, { timer: NodeJS.Timeout; listeners: Set<(e: DomainError) => void> }>();

  watch(key: string, recheck: () => Promise<DomainError | null>, intervalMs: number, onLapse: (e: DomainError) => void): () => void {
    let w = this.watchers.get(key);
    if (!w) {
      const listeners = new Set<(e: DomainError) => void>();
      const timer = setInterval(() => {
        recheck().then(
          (e) => {
            if (e) for (const l of [...listeners]) l(e);
          },
          () => {},
        );
      }, intervalMs);
      timer.unref();
      w = { timer, listeners };
      this.watchers.set(key, w);
    }
    const entry = w;
    entry.listeners.add(onLapse);
    return () => {
      entry.listeners.delete(onLapse);
      if (entry.listeners.size === 0 && this.watchers.get(key) === entry) {
        clearInterval(entry.timer);
        this.watchers.delete(key);
      }
    };
  }
}

const shared = new WeakMap<object, SharedRecheck>();

/**
 * Passes `source` through, re-checking the caller's credential every `intervalMs`
 * (SUBSCRIPTION_AUTH_RECHECK_MS) with `recheck` (the same authentication the operation passed at
 * subscribe time). A refusal ends the stream with a CredentialLapsed marker; a check that cannot run
 * (database briefly gone) is not a refusal: the stream goes on and the next check decides.
 * `share` (an owner object, e.g. the app, and the credential's key) makes the check one per
 * credential and interval for all its subscriptions.
 */
export function untilCredentialLapses<T>(
  source: AsyncIterable<T>,
  recheck: () => Promise<DomainError | null>,
  intervalMs: number,
  share?: { owner: object; key: string },
): Repeater<T | CredentialLapsed> {
  return new Repeater<T | CredentialLapsed>(async (push, stop) => {
    const it = source[Symbol.asyncIterator]();
    let lapsed: DomainError | null = null;
    let wakeLapse: () => void = () => {};
    const lapse = new Promise<void>((resolve) => (wakeLapse = resolve));
    const onLapse = (e: DomainError) => {
      if (!lapsed) {
        lapsed = e;
        wakeLapse();
      }
    };
    let unwatch: () => void;
    if (share) {
      let registry = shared.get(share.owner);
      if (!registry) shared.set(share.owner, (registry = new SharedRecheck()));
      unwatch = registry.watch(`${intervalMs}:${share.key}`, recheck, intervalMs, onLapse);
    } else {
      const timer = setInterval(() => {
        recheck().then(
          (e) => e && onLapse(e),
          () => {},
        );
      }, intervalMs);
      timer.unref();
      unwatch = () => clearInterval(timer);
    }
    const stopped = stop.then(() => ({ kind: 'stop' as const }));
    const lapsedSignal = lapse.then(() => ({ kind: 'lapse' as const }));
    try {
      for (;;) {
        const r = await Promise.race([it.next().then((v) => ({ kind: 'next' as const, v })), lapsedSignal, stopped]);
        if (r.kind === 'stop') break;
        if (r.kind === 'lapse') {
          await push(new CredentialLapsed(lapsed!));
          break;
        }
        if (r.v.done) break;
        await push(r.v.value);
      }
    } finally {
      unwatch();
      await it.return?.();
    }
    stop();
  });
}
