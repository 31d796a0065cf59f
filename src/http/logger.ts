import pino, { type Logger } from 'pino';

/** JSON logs. Credentials are redacted wherever they may appear. */
export function createLogger(level: string): Logger {
  return pino({
    level,
    base: { service: 'gateway' },
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers["api-key"]',
        'req.headers.cookie',
        'headers.authorization',
        'headers["api-key"]',
        '*.password',
        '*.refresh_token',
        '*.token',
        '*.apiKey',
        '*.api_key',
        '*.key',
      ],
      censor: '[redacted]',
    },
  });
}
