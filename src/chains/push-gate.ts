import { WrongChainError, type ChainIdentity, type ProviderGate } from './chain-identity.js';

/** Whether a push socket may be used now, or is left alone for `retryMs` (the next URL is tried meanwhile). */
export type PushAdmission = { use: true } | { use: false; retryMs: number; reason: string };

/** The hooks a head subscription calls (evm.heads.ts, solana.heads.ts); all optional: absent, every URL is used. */
export interface PushChecks {
  /** Before each connection to `url`. */
  admit?: (url: string) => Promise<PushAdmission>;
  /** EVM: the chain the socket itself serves (asked over it before subscribing). Absent: not asked. */
  verify?: (url: string, identity: ChainIdentity) => PushAdmission;
  /** On each notification: false drops the socket (its RPC provider has been refused since). */
  still?: (url: string) => boolean;
}

/** How soon a socket waiting for the watched chain to be known (or an unanswered probe) is tried again. */
const PUSH_WAIT_MS = 1000;

const hostOf = (url: string): string | null => {
  try {
    return new URL(url).host;
  } catch {
    return null;
  }
};

/**
 * The RPC URL each WebSocket URL belongs to (null: none). Lists of the same length pair by index (the
 * derived URLs always do: one per RPC URL); otherwise a WebSocket URL pairs with the one RPC URL whose
 * derived WebSocket URL (`derive`: EVM same host and port, SOLANA port + 1) has its host, and with none
 * when no RPC URL or several do.
 */
export function pairPushUrls(rpcUrls: string[], wsUrls: string[], derive: (rpcUrl: string) => string): (string | null)[] {
  if (rpcUrls.length === wsUrls.length) return [...rpcUrls];
  const derived = rpcUrls.map((r) => {
    try {
      return hostOf(derive(r));
    } catch {
      return null;
    }
  });
  return wsUrls.map((ws) => {
    const host = hostOf(ws);
    const matches = rpcUrls.filter((_, i) => host !== null && derived[i] === host);
    return matches.length === 1 ? matches[0]! : null;
  });
}

/**
 * The checks of a network's push sockets, from its provider gate (nothing when the gate does not
 * enforce: tools and one-adapter tests use every URL, as their RPC calls use every provider).
 * - `socket` (EVM): a socket is opened only once the watched chain is known, and never while the RPC
 *   provider it belongs to is refused; before subscribing, the socket's own chain id and block 0 are
 *   judged by the gate (`judgeSocket`): another chain is refused (alarmed once per identity, left alone
 *   for the gate's refused-retry interval), an unknown expectation waits.
 * - `paired` (SOLANA, whose pubsub ports answer subscriptions only): a socket is opened only while
 *   the RPC provider it belongs to is verified on the watched chain (probed now when its verification
 *   is due); a WebSocket URL that belongs to no RPC URL is never used.
 * Both: a socket is dropped as soon as its RPC provider is refused.
 */
export function pushChecks(gate: ProviderGate, rpcUrls: string[], wsUrls: string[], derive: (rpcUrl: string) => string, mode: 'socket' | 'paired'): PushChecks {
  if (!gate.enforcing) return {};
  const pairs = pairPushUrls(rpcUrls, wsUrls, derive);
  const pairOf = (url: string): string | null => pairs[wsUrls.indexOf(url)] ?? null;
  const refusedRetry = gate.refusedRetryInterval;
  return {
    async admit(url) {
      if (!gate.expected()) return { use: false, retryMs: PUSH_WAIT_MS, reason: 'the watched chain is not known yet' };
      const rpc = pairOf(url);
      if (mode === 'socket') {
        if (rpc && gate.statusOf(rpc)?.state === 'refused') return { use: false, retryMs: refusedRetry, reason: 'its RPC provider serves another chain' };
        return { use: true };
      }
      if (!rpc) return { use: false, retryMs: refusedRetry, reason: 'it belongs to no RPC URL, so its chain cannot be verified' };
      try {
        await gate.admit(rpc, false, true);
        return { use: true };
      } catch (err) {
        if (err instanceof WrongChainError) return { use: false, retryMs: refusedRetry, reason: err.message };
        return { use: false, retryMs: PUSH_WAIT_MS * 5, reason: `its RPC provider is not verified: ${err instanceof Error ? err.message : String(err)}` };
      }
    },
    verify:
      mode === 'socket'
        ? (url, identity) => {
            const v = gate.judgeSocket(url, identity);
            if (v.state === 'ok') return { use: true };
            if (v.state === 'unknown') return { use: false, retryMs: PUSH_WAIT_MS, reason: 'the watched chain is not known yet' };
            return { use: false, retryMs: refusedRetry, reason: v.error.message };
          }
        : undefined,
    still(url) {
      const rpc = pairOf(url);
      return !rpc || gate.statusOf(rpc)?.state !== 'refused';
    },
  };
}
