/**
 * One domain error type with stable codes. Transports map it once each:
 * REST → HTTP status + envelope (`src/rest/envelope.ts`), GraphQL → `extensions.code`
 * (`src/graphql/errors.ts`). Messages are written for clients; never put SQL, RPC or stack text here.
 */
export const ErrorCodes = {
  BAD_REQUEST: 400,
  QUERY_TOO_COMPLEX: 400,
  TOO_MANY_ALIASES: 400,
  QUERY_TOO_DEEP: 400,
  VALIDATION_FAILED: 400,
  BAD_USER_INPUT: 400,
  MALFORMED_JSON: 400,
  UNAUTHENTICATED: 401,
  INVALID_API_KEY: 401,
  INVALID_TOKEN: 401,
  INVALID_CREDENTIALS: 401,
  SESSION_REVOKED: 401,
  REFRESH_TOKEN_REUSED: 401,
  CHECKOUT_KEY_EXPIRED: 401,
  FORBIDDEN: 403,
  INVALID_PASSWORD: 403,
  REAUTHENTICATION_REQUIRED: 403,
  // Second factor (docs/api.md "Second factor (TOTP, passkeys, recovery codes)"): the login or re-authentication needs one; the
  // one given is wrong, or was used already; the merchant's policy wants one enrolled first.
  SECOND_FACTOR_REQUIRED: 403,
  INVALID_SECOND_FACTOR: 403,
  SECOND_FACTOR_REUSED: 403,
  SECOND_FACTOR_ENROLMENT_REQUIRED: 403,
  CHALLENGE_EXPIRED: 401,
  WRONG_ENVIRONMENT: 403,
  MERCHANT_MISMATCH: 403,
  SCOPE_DENIED: 403,
  IP_NOT_ALLOWED: 403,
  NOT_A_MEMBER: 403,
  NO_MEMBERSHIP: 403,
  NOT_FOUND: 404,
  ROUTE_NOT_FOUND: 404,
  MERCHANT_NOT_FOUND: 404,
  ORDER_NOT_FOUND: 404,
  TOKEN_NOT_FOUND: 404,
  PAYMENT_LINK_NOT_FOUND: 404,
  REFUND_NOT_FOUND: 404,
  // A claim link that is unknown, or whose refund no longer takes an address (claimed, sent, cancelled).
  CLAIM_NOT_FOUND: 404,
  WEBHOOK_DELIVERY_NOT_FOUND: 404,
  MEMBER_NOT_FOUND: 404,
  INVITE_NOT_FOUND: 404,
  INVALID_INVITE: 404,
  METHOD_NOT_ALLOWED: 405,
  REQUEST_TIMEOUT: 408,
  CONFLICT: 409,
  EMAIL_TAKEN: 409,
  SECOND_FACTOR_STATE: 409,
  SECOND_FACTOR_REQUIRED_BY_POLICY: 409,
  PASSKEY_NOT_FOUND: 404,
  DUPLICATE_ORDER_NO: 409,
  ORDER_CLOSED: 409,
  ORDER_EXPIRED: 409,
  QUOTE_NOT_LOCKED: 409,
  PAYMENT_LINK_INACTIVE: 409,
  PAYMENT_LINK_EXPIRED: 409,
  PAYMENT_LINK_EXHAUSTED: 409,
  ALREADY_A_MEMBER: 409,
  LAST_OWNER: 409,
  // An invite link already used, revoked, or past its expiry: it never works again.
  INVITE_USED: 410,
  INVITE_REVOKED: 410,
  INVITE_EXPIRED: 410,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  HEADERS_TOO_LARGE: 431,
  TOKEN_NOT_SUPPORTED: 422,
  WALLET_NETWORK_MISMATCH: 422,
  NETWORK_NOT_WATCHED: 422,
  NO_NETWORK_WATCHED: 422,
  NOTIFICATION_URL_REJECTED: 422,
  INVALID_SETTLEMENT_ADDRESS: 422,
  SETTLEMENT_ADDRESS_REFUSED: 422,
  IDEMPOTENCY_KEY_REUSED: 422,
  // Refunds (docs/refunds.md): more than the source received (less what was refunded before), a kind
  // the source does not offer, an address refused (format, ours, a contract), a move the state table refuses.
  REFUND_EXCEEDS_RECEIVED: 422,
  REFUND_NOT_OFFERED: 422,
  REFUND_ADDRESS_REFUSED: 422,
  REFUND_STATE: 409,
  // A second request with an Idempotency-Key whose first request has not finished yet (retry after it).
  IDEMPOTENCY_KEY_IN_FLIGHT: 409,
  RATE_LIMITED: 429,
  SUBSCRIPTION_LIMIT_REACHED: 429,
  INTERNAL: 500,
  SERVICE_UNAVAILABLE: 503,
  MAIL_FAILED: 502,
  MAIL_UNAVAILABLE: 503,
  RATE_UNAVAILABLE: 503,
} as const;

export type ErrorCode = keyof typeof ErrorCodes;

export class DomainError extends Error {
  override readonly name = 'DomainError';
  constructor(
    readonly code: ErrorCode,
    message: string,
    /** Safe, client-facing details (field errors, retry hints). */
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
  }

  get httpStatus(): number {
    return ErrorCodes[this.code];
  }
}

export const isDomainError = (e: unknown): e is DomainError => e instanceof DomainError;
