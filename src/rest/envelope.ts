import type { FastifyError } from 'fastify';
import { DomainError, isDomainError, type ErrorCode } from '../common/errors.js';
import { unavailableError } from '../db/connection.errors.js';

/** Every REST answer, errors included: `{status_code, message, data}`. */
export interface Envelope<T = unknown> {
  status_code: number;
  message: string;
  data: T;
}

export function envelope<T>(status: number, message: string, data: T): Envelope<T> {
  return { status_code: status, message, data };
}

// fastify's own client errors, mapped to our codes (their text is library wording; ours is stable).
const FASTIFY_CODES: Record<string, [ErrorCode, string]> = {
  FST_ERR_CTP_INVALID_JSON_BODY: ['MALFORMED_JSON', 'Malformed JSON body'],
  FST_ERR_CTP_EMPTY_JSON_BODY: ['MALFORMED_JSON', 'Empty JSON body'],
  FST_ERR_CTP_INVALID_MEDIA_TYPE: ['UNSUPPORTED_MEDIA_TYPE', 'Unsupported Content-Type; send application/json'],
  FST_ERR_CTP_INVALID_TYPE: ['UNSUPPORTED_MEDIA_TYPE', 'Invalid Content-Type header'],
  FST_ERR_CTP_BODY_TOO_LARGE: ['PAYLOAD_TOO_LARGE', 'Request body too large'],
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: ['BAD_REQUEST', 'Invalid Content-Length'],
  FST_ERR_BAD_URL: ['BAD_REQUEST', 'Malformed URL'],
  FST_ERR_ASYNC_CONSTRAINT: ['BAD_REQUEST', 'Bad request'],
};

/**
 * The one mapping from anything thrown to a client-safe error. Unknown errors become INTERNAL with a
 * fixed message; the caller logs the original.
 */
export function toDomainError(err: unknown): DomainError {
  if (isDomainError(err)) return err;
  const fe = err as Partial<FastifyError> & { status?: number; type?: string };
  if (fe && typeof fe.code === 'string' && FASTIFY_CODES[fe.code]) {
    const [code, message] = FASTIFY_CODES[fe.code];
    return new DomainError(code, message);
  }
  const status = fe?.statusCode ?? fe?.status;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    if (status === 413) return new DomainError('PAYLOAD_TOO_LARGE', 'Request body too large');
    if (status === 415) return new DomainError('UNSUPPORTED_MEDIA_TYPE', 'Unsupported Content-Type; send application/json');
    return new DomainError('BAD_REQUEST', 'Bad request');
  }
  return unavailableError(err) ?? new DomainError('INTERNAL', 'Internal server error');
}

export function errorEnvelope(err: DomainError): Envelope<Record<string, unknown>> {
  return envelope(err.httpStatus, err.message, { code: err.code, ...(err.details ?? {}) });
}
