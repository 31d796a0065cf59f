import { isConnectionError, unavailableError } from '../../src/db/connection.errors';

/** A lost database is a 503 (SERVICE_UNAVAILABLE) for REST and GraphQL; everything else is not this mapping's business. */
const pgError = (code: string, message = 'x') => Object.assign(new Error(message), { code });

const CASES: [string, unknown, boolean][] = [
  ['server refused the connection', pgError('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432'), true],
  ['backend terminated by an administrator (57P01)', pgError('57P01', 'terminating connection due to administrator command'), true],
  ['server starting up (57P03)', pgError('57P03', 'the database system is starting up'), true],
  ['too many connections (53300)', pgError('53300'), true],
  ['connection failure (08006)', pgError('08006'), true],
  ['pg: connection ended', new Error('Connection terminated unexpectedly'), true],
  [
    'knex: no connection from the pool',
    Object.assign(new Error('Knex: Timeout acquiring a connection. The pool is probably full.'), { name: 'KnexTimeoutError' }),
    true,
  ],
  ['MikroORM ConnectionException', Object.assign(new Error('x'), { name: 'ConnectionException' }), true],
  ['wrapped in a cause (rate limiter store)', Object.assign(new Error('rate limiter store unavailable'), { cause: pgError('ECONNRESET') }), true],
  ['one of an AggregateError (dual-stack connect)', new AggregateError([pgError('ECONNREFUSED')], ''), true],
  ['unique violation (23505): a client conflict', pgError('23505', 'duplicate key value'), false],
  ['syntax error (42601): a bug', pgError('42601'), false],
  ['a plain Error', new Error('boom'), false],
  ['not an error', 'ECONNREFUSED', false],
  ['null', null, false],
];

describe('isConnectionError / unavailableError', () => {
  it.each(CASES)('%s', (_name, err, expected) => {
    expect(isConnectionError(err)).toBe(expected);
    const mapped = unavailableError(err);
    if (expected) expect(mapped).toMatchObject({ code: 'SERVICE_UNAVAILABLE', httpStatus: 503 });
    else expect(mapped).toBeNull();
  });

  it('does not loop on a cause cycle', () => {
    const a: Error & { cause?: unknown } = new Error('a');
    a.cause = a;
    expect(isConnectionError(a)).toBe(false);
  });
});
