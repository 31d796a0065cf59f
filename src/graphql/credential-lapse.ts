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
 * Passes `source` through, re-checking the caller's credential every `intervalMs`
 * (SUBSCRIPTION_AUTH_RECHECK_MS) with `recheck` (the same authentication the operation passed at
 * subscribe time). A refusal ends the stream with a CredentialLapsed marker; a check that cannot run
 * (database briefly gone) is not a refusal: the stream goes on and the next check decides.
 */
export function untilCredentialLapses<T>(source: AsyncIterable<T>, recheck: () => Promise<DomainError | null>, intervalMs: number): Repeater<T | CredentialLapsed> {
  return new Repeater<T | CredentialLapsed>(async (push, stop) => {
    const it = source[Symbol.asyncIterator]();
    let lapsed: DomainError | null = null;
    let wakeLapse: () => void = () => {};
    const lapse = new Promise<void>((resolve) => (wakeLapse = resolve));
    const timer = setInterval(() => {
      recheck().then(
        (e) => {
          if (e && !lapsed) {
            lapsed = e;
            wakeLapse();
          }
        },
        () => {},
      );
    }, intervalMs);
    timer.unref();
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
      clearInterval(timer);
      await it.return?.();
    }
    stop();
  });
}
