import { DomainError } from '../../common/errors.js';

export type TronRpcFailure =
  /** Every URL failed with network errors, timeouts, 429 or 5xx until the retries ran out. */
  | 'unavailable'
  /** Nodes answered, but not with the JSON shape the endpoint documents. */
  | 'bad_response'
  /** java-tron rejected the request itself (`{"Error": …}`): retrying elsewhere would not help. */
  | 'node_error'
  /** Block and transaction-info answers disagreed (a fork switch between two calls) on every retry. */
  | 'inconsistent';

/**
 * What a TRON adapter throws when it gives up. A DomainError with code SERVICE_UNAVAILABLE so a
 * transport that meets it maps it to 503 with a safe message; the RPC detail lives in fields that
 * are for logs only (never `details`, which is client-facing).
 */
export class TronRpcError extends DomainError {
  constructor(
    readonly failure: TronRpcFailure,
    /** Endpoint path, e.g. `/wallet/getnowblock`. */
    readonly path: string,
    readonly attempts: number,
    /** Log-only description of the last failure (URL, HTTP status, node message). */
    readonly lastError: string,
  ) {
    super('SERVICE_UNAVAILABLE', 'The TRON network is temporarily unreachable');
  }
}

export const isTronRpcError = (e: unknown): e is TronRpcError => e instanceof TronRpcError;
