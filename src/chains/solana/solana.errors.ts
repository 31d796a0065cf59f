import type { Network } from '../../common/environment.js';

/**
 * Raised when a Solana RPC call still fails after every retry on every configured endpoint.
 * Not a DomainError: it is for watchers/jobs and logs, never shown to API clients, and it
 * keeps the last RPC failure as `cause` for diagnosis.
 */
export class SolanaRpcError extends Error {
  override readonly name = 'SolanaRpcError';
  readonly code = 'CHAIN_RPC_UNAVAILABLE' as const;
  constructor(
    readonly network: Network,
    readonly method: string,
    readonly attempts: number,
    /** True when the failure was a permanent RPC error (bad params, unsupported method), so more retries would not help. */
    readonly permanent: boolean,
    options: { cause: unknown },
  ) {
    const last = options.cause instanceof Error ? options.cause.message : String(options.cause);
    super(`${network} RPC ${method} failed after ${attempts} attempt(s): ${last}`, options);
  }
}

export const isSolanaRpcError = (e: unknown): e is SolanaRpcError => e instanceof SolanaRpcError;
