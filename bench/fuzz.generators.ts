/**
 * Generators of malformed requests and the judges of their answers, shared by the fuzz tests
 * (test/foundation/fuzz.test.ts, test/payments/fuzz.test.ts) and the 10,000-request fuzz benchmark
 * (bench/fuzz.bench.ts). fast-check arbitraries: with a fixed seed, `fc.sample` gives the same
 * requests every run, so a failure reproduces. No imports from test/: the benchmark is built with src.
 */
import fc from 'fast-check';

/** Library, database or runtime internals that must never reach a client. */
export const LEAK =
  /\n\s+at |node_modules|\/src\/|\.(ts|js):\d+|SQLSTATE|syntax error at|relation "|violates|duplicate key|invalid byte sequence|FST_ERR|ZodError|TypeError|ReferenceError|Cannot read prop|stack/i;

export interface FuzzRequest {
  method: string;
  /** Raw request target (sent as is). */
  path: string;
  headers: Record<string, string>;
  body?: string | Uint8Array;
}

/** The auth/REST and GraphQL generators; `OWNER_EMAIL` is a real user's, `DOCS` are printed Login, RefreshToken, RotateApiKey and Me documents. */
export function authFuzzArbitraries(OWNER_EMAIL: string, DOCS: string[]) {
  const hex = (min: number, max: number) => fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: min, maxLength: max });
  /** Odd unicode: astral symbols, combining marks, RTL, zero-width, lone surrogates, NUL and control characters. */
  const oddChar = fc.constantFrom(
    '\u0000',
    '\u0007',
    '\u001b',
    '\u007f',
    '\u00ad',
    '\u0301',
    '\u200b',
    '\u200e',
    '\u202e',
    '\ufeff',
    '\ufffd',
    '\ud800',
    '\udfff',
    '😀',
    '👩‍👩‍👧',
    '𝕏',
    'ﷺ',
    'Ω',
    'ß',
    'İ',
    '\u2028',
    '"',
    '\\',
    "'",
    '%',
    '<',
    '>',
    '{',
    '}',
    '$',
  );
  const oddString = fc.oneof(
    fc.string({ unit: 'binary', maxLength: 40 }),
    fc.string({ unit: 'grapheme', maxLength: 40 }),
    fc.string({ unit: oddChar, maxLength: 20 }),
    fc.constantFrom(
      '',
      ' ',
      'null',
      'undefined',
      'NaN',
      '[object Object]',
      "' or 1=1 --",
      '"; drop table merchants; --',
      '${jndi:ldap://x}',
      '../../etc/passwd',
    ),
  );
  const hugeString = fc.constantFrom(300, 5_000, 70_000).map((n) => 'A'.repeat(n));
  const anyString = fc.oneof({ weight: 4, arbitrary: oddString }, { weight: 1, arbitrary: hugeString });
  /** JSON values of the wrong (or right) type for any field. */
  const anyValue: fc.Arbitrary<unknown> = fc.oneof(
    anyString,
    fc.integer(),
    fc.double(),
    fc.boolean(),
    fc.constant(null),
    fc.array(fc.oneof(fc.string(), fc.integer()), { maxLength: 4 }),
    fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }),
    fc.constantFrom('merchant', OWNER_EMAIL, OWNER_EMAIL.toUpperCase(), 'correct horse battery', 'a@b.c', `${OWNER_EMAIL}\u0000`, 'a\u0000b'),
  );

  /**
   * Header values go out as raw bytes over a plain socket, so control characters, NUL and obs-text
   * reach the server's HTTP parser (fetch would refuse them). Only CR and LF are left out: they would
   * end the header instead of being part of it.
   */
  const latin1 = (min: number, max: number, maxLength: number) => fc.string({ unit: fc.integer({ min, max }).map((c) => String.fromCharCode(c)), maxLength });
  const noCrLf = (a: fc.Arbitrary<string>) => a.map((s) => s.replace(/[\r\n]/g, ''));
  /** Printable ASCII: gets past the HTTP parser to routing, auth and validation. */
  const cleanValue = latin1(0x21, 0x7e, 60);
  /** Bytes the HTTP parser may refuse: obs-text, UTF-8 of odd unicode, control characters, NUL, oversized. */
  const dirtyValue = noCrLf(
    fc.oneof(
      { weight: 3, arbitrary: latin1(0x20, 0xff, 60) },
      { weight: 3, arbitrary: oddString.map((s) => Buffer.from(s, 'utf8').toString('latin1')) },
      { weight: 2, arbitrary: latin1(0x00, 0xff, 20) },
      { weight: 2, arbitrary: fc.constantFrom(2_000, 20_000).map((n) => 'k'.repeat(n)) },
    ),
  );
  const jwtLike = fc
    .tuple(fc.base64String({ maxLength: 40 }), fc.base64String({ maxLength: 80 }), fc.base64String({ maxLength: 43 }))
    .map((p) => p.map((s) => s.replace(/=/g, '').replace(/\+/g, '-').replace(/\//g, '_')).join('.'));
  const contentType = fc.constantFrom(
    'application/json',
    'application/json; charset=utf-8',
    'application/json; charset=latin1',
    'text/plain',
    'text/html',
    'application/x-www-form-urlencoded',
    'multipart/form-data; boundary=xyz',
    'application/octet-stream',
    'application/graphql',
    'application/vnd.api+json',
    'json',
    '*/*',
    ';;;',
  );

  /** Header sets built from `value` (clean or dirty bytes); present or absent at random. */
  function headerSet(value: fc.Arbitrary<string>) {
    const authorization = fc.oneof(
      value,
      jwtLike.map((t) => `Bearer ${t}`),
      value.map((t) => `Bearer ${t}`),
      fc.constantFrom('Bearer', 'Bearer ', 'bearer x', 'Basic dXNlcjpwYXNz', 'Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.', 'Token abc'),
    );
    const apiKey = fc.oneof(
      value,
      hex(64, 64).map((h) => `cpg_${h}`),
      hex(0, 80).map((h) => `cpg_${h}`),
      fc.constantFrom('cpg_', 'CPG_' + 'A'.repeat(64), 'sk_live_123'),
    );
    const rest = fc
      .record(
        {
          'content-type': fc.oneof(
            { weight: 6, arbitrary: fc.constant('application/json') },
            { weight: 3, arbitrary: contentType },
            { weight: 1, arbitrary: value },
          ),
          authorization,
          'api-key': apiKey,
          'x-request-id': value,
          'x-checkout-key': value,
          accept: fc.oneof(fc.constantFrom('application/json', 'text/html', '*/*', 'application/graphql-response+json'), value),
          'x-forwarded-for': value,
          extra: fc.tuple(fc.stringMatching(/^x-fuzz-[a-z0-9-]{1,12}$/), value),
        },
        { requiredKeys: [] },
      )
      .map(({ extra, ...h }) => {
        const out: Record<string, string> = { ...h };
        if (extra) out[extra[0]] = extra[1];
        return out;
      });
    const graphql = fc.record(
      {
        'content-type': fc.oneof({ weight: 6, arbitrary: fc.constant('application/json') }, { weight: 1, arbitrary: contentType }),
        authorization,
        'api-key': apiKey,
        'x-checkout-key': value,
        'apollo-require-preflight': fc.constantFrom('true', ''),
      },
      { requiredKeys: [] },
    );
    return { rest, graphql };
  }
  const clean = headerSet(cleanValue);
  const dirty = headerSet(dirtyValue);
  const headers = fc.oneof({ weight: 4, arbitrary: clean.rest }, { weight: 1, arbitrary: dirty.rest });

  /** Bodies: random JSON, right shape with wrong types, truncated JSON, garbage bytes, huge, deeply nested. */
  const body: fc.Arbitrary<string | Uint8Array | undefined> = fc.oneof(
    fc.constant(undefined),
    fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
    fc.record({ email: anyValue, password: anyValue, user_type: anyValue }, { requiredKeys: [] }).map((v) => JSON.stringify(v)),
    // almost right: well-typed login and refresh bodies that still must fail
    fc
      .record({
        email: fc.oneof(fc.constantFrom(OWNER_EMAIL, OWNER_EMAIL.toUpperCase(), ` ${OWNER_EMAIL} `), fc.emailAddress(), oddString),
        password: fc.oneof(oddString, fc.string()),
        user_type: fc.oneof({ weight: 3, arbitrary: fc.constant('merchant') }, { weight: 1, arbitrary: oddString }),
      })
      .map((v) => JSON.stringify(v)),
    fc.record({ refresh_token: fc.oneof(oddString, fc.base64String(), hex(64, 64), hugeString) }).map((v) => JSON.stringify(v)),
    fc.record({ refresh_token: anyValue, extra: anyValue }, { requiredKeys: [] }).map((v) => JSON.stringify(v)),
    fc.tuple(fc.jsonValue({ maxDepth: 3 }), fc.nat()).map(([v, n]) => {
      const s = JSON.stringify({ email: 'a@b.c', v });
      return s.slice(0, n % s.length);
    }),
    fc.string({ unit: 'binary', maxLength: 200 }),
    fc.uint8Array({ minLength: 1, maxLength: 200 }),
    fc.constantFrom(
      '{"email": "\\ud800", "password": "\\u0000", "user_type": "merchant"}',
      `{"email": "${OWNER_EMAIL}\\u0000", "password": "correct horse battery staple", "user_type": "merchant"}`,
      '{"refresh_token": "\\u0000"}',
      '{"__proto__": {"isAdmin": true}, "email": "a@b.c"}',
      '{"constructor": {"prototype": {"x": 1}}}',
      '['.repeat(3000) + ']'.repeat(3000),
      '{"a":'.repeat(2000) + '1' + '}'.repeat(2000),
      '{"email": "a@b.c", "email": "b@c.d"}',
      '1e999999',
      '"just a string"',
      'null',
      '\ufeff{"email": "a@b.c"}',
    ),
    hugeString.map((s) => JSON.stringify({ email: s, password: s, user_type: 'merchant' })),
  );

  /** The routes under test with their own method (the other methods get 405). */
  const ROUTES: [string, string][] = [
    ['POST', '/api/v2/auth/login'],
    ['POST', '/api/v2/auth/refresh'],
    ['POST', '/api/v2/auth/logout'],
    ['GET', '/api/v2/auth/me'],
    ['GET', '/api/v2/testnet/merchant/me'],
    ['GET', '/api/v2/mainnet/merchant/me'],
  ];
  const KNOWN_PATHS = ROUTES.map(([, p]) => p);
  const METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'];
  const segment = fc.oneof(
    { weight: 12, arbitrary: fc.webSegment() },
    { weight: 12, arbitrary: fc.stringMatching(/^[a-z0-9._~-]{1,12}$/) },
    { weight: 9, arbitrary: oddString.map((s) => encodeURIComponent(s.replace(/[\ud800-\udfff]/g, ''))) },
    // raw (unencoded) UTF-8 bytes and characters that should have been percent-encoded
    {
      weight: 1,
      arbitrary: oddString.map((s) =>
        Buffer.from(s, 'utf8')
          .toString('latin1')
          .replace(/[^\x21-\xff]/g, ''),
      ),
    },
    { weight: 2, arbitrary: fc.constantFrom('a"b', '<script>', '{x}', '|', '\\', '^', '`') },
    {
      weight: 9,
      arbitrary: fc.constantFrom(
        '%',
        '%zz',
        '%E0%A4%A',
        '%00',
        '..',
        '.',
        '',
        'api',
        'v2',
        'v3',
        'testnet',
        'mainnet',
        'merchant',
        'me',
        'graphql2',
        'healthz.json',
      ),
    },
  );
  const unknownPath = fc.oneof(
    fc.array(segment, { minLength: 1, maxLength: 5 }).map((s) => '/' + s.join('/')),
    fc
      .tuple(
        fc.constantFrom('/api/v2/', '/api/v2/testnet/', '/api/v2/mainnet/', '/api/v2/auth/', '/api/', '/api/v2/sandbox/'),
        fc.array(segment, { minLength: 1, maxLength: 3 }),
      )
      .map(([p, s]) => p + s.join('/')),
    fc.constantFrom(...KNOWN_PATHS).chain((p) => segment.map((s) => `${p}/${s}`)),
  );
  const query = fc.option(
    fc.array(fc.tuple(segment, segment), { maxLength: 3 }).map((q) => '?' + q.map(([k, v]) => `${k}=${v}`).join('&')),
    { nil: '' },
  );
  const target = fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...ROUTES) },
    { weight: 2, arbitrary: fc.tuple(fc.constantFrom(...METHODS), fc.constantFrom(...KNOWN_PATHS)) },
    { weight: 3, arbitrary: fc.tuple(fc.constantFrom(...METHODS), unknownPath) },
  );
  const restRequest: fc.Arbitrary<FuzzRequest> = fc
    .record({ target, query, headers, body })
    .map(({ target: [method, path], query: q, headers: h, body: b }) => ({ method, path: path + q, headers: h, body: b }));

  // ---- GraphQL -----------------------------------------------------------------------------------

  const mutatedDoc = fc
    .tuple(
      fc.constantFrom(...DOCS),
      fc.nat(),
      fc.constantFrom('truncate', 'insert', 'delete', 'swap'),
      fc.oneof(oddChar, fc.constantFrom('{', '}', '(', ')', '$', ':', '!', '@', '...', '#', '"')),
    )
    .map(([doc, n, op, ch]) => {
      const i = n % (doc.length - 2);
      if (op === 'truncate') return doc.slice(0, i);
      if (op === 'insert') return doc.slice(0, i) + ch + doc.slice(i);
      if (op === 'delete') return doc.replace(/[{}()$:!]/g, (c, at: number) => (at >= i ? '' : c));
      return doc.replace(/[{}]/g, (c) => (c === '{' ? '}' : '{'));
    });
  const stringish = fc.oneof(
    { weight: 3, arbitrary: fc.oneof(oddString, fc.emailAddress(), fc.constantFrom(OWNER_EMAIL, 'A'.repeat(300), 'A'.repeat(600), '')) },
    { weight: 1, arbitrary: anyValue },
  );
  const variables = fc.oneof(
    {
      weight: 3,
      arbitrary: fc.record(
        {
          email: stringish,
          password: stringish,
          refreshToken: stringish,
          environment: fc.oneof(anyValue, fc.constantFrom('SANDBOX', 'PRODUCTION', 'sandbox', 'TESTNET')),
        },
        { requiredKeys: [] },
      ),
    },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
  );
  const ident = fc.stringMatching(/^[_A-Za-z][_0-9A-Za-z]{0,12}$/);
  /** Parses, but fails validation: unknown fields, wrong argument types, unknown fragments, unused variables. */
  const invalidDoc = fc.oneof(
    ident.map((f) => `{ ${f} }`),
    ident.map((f) => `query Q { me { ${f} } }`),
    fc.tuple(ident, fc.integer()).map(([f, n]) => `mutation { login(email: ${n}, password: "x") { ${f} } }`),
    ident.map((f) => `mutation { login(email: "a@b.c", password: "x", ${f}: 1) { token } }`),
    ident.map((f) => `{ me { ...${f} } }`),
    ident.map((v) => `query ($${v}: Int) { me { id } }`),
    fc.constantFrom(
      'mutation { rotateApiKey(environment: TESTNET) { apiKey } }',
      'query { login { token } }',
      'mutation { logout { id } }',
      '{ me }',
      'query A { me { id } } query A { me { id } }',
    ),
  );
  /** Login with two string variables: reaches the resolver, then the service's own validation. */
  const loginVars = fc.record({
    email: fc.oneof(fc.emailAddress(), oddString, fc.constantFrom(OWNER_EMAIL, `\u0000${OWNER_EMAIL}`, 'A'.repeat(300), '')),
    password: fc.oneof(oddString, fc.string(), fc.constantFrom('A'.repeat(300), '')),
  });
  const graphqlBody = fc.oneof(
    fc.record({ query: invalidDoc }).map((b) => JSON.stringify(b)),
    loginVars.map((variables) => JSON.stringify({ query: DOCS[0], variables, operationName: 'Login' })),
    fc
      .record({ refreshToken: fc.oneof(oddString, hex(64, 64), fc.constantFrom('', 'A'.repeat(600))) })
      .map((variables) => JSON.stringify({ query: DOCS[1], variables })),
    // valid operation, random variables and operationName
    fc
      .record(
        {
          query: fc.constantFrom(...DOCS.slice(0, 3)),
          variables,
          operationName: fc.option(fc.oneof(fc.constantFrom('Login', 'RefreshToken', 'RotateApiKey', 'Nope'), oddString), { nil: undefined }),
        },
        { requiredKeys: ['query'] },
      )
      .map((b) => JSON.stringify(b)),
    // random or mangled query strings
    fc
      .record({ query: fc.oneof(anyString, mutatedDoc), variables: fc.option(variables, { nil: undefined }) }, { requiredKeys: ['query'] })
      .map((b) => JSON.stringify(b)),
    // wrong field types and shapes
    fc.record({ query: anyValue, variables: anyValue, operationName: anyValue, extensions: anyValue }, { requiredKeys: [] }).map((b) => JSON.stringify(b)),
    fc.array(fc.record({ query: fc.constantFrom(...DOCS) }), { minLength: 1, maxLength: 3 }).map((b) => JSON.stringify(b)),
    body.filter((b): b is string | Uint8Array => b !== undefined),
  );
  const graphqlHeaders = fc.oneof({ weight: 4, arbitrary: clean.graphql }, { weight: 1, arbitrary: dirty.graphql });
  const graphqlRequest: fc.Arbitrary<FuzzRequest> = fc.oneof(
    {
      weight: 9,
      arbitrary: fc
        .record({ headers: graphqlHeaders, body: graphqlBody })
        .map(({ headers: h, body: b }) => ({ method: 'POST', path: '/graphql', headers: h, body: b })),
    },
    {
      weight: 1,
      arbitrary: fc.record({ headers: graphqlHeaders, q: fc.oneof(anyString, mutatedDoc, fc.constantFrom(...DOCS)) }).map(({ headers: h, q }) => ({
        method: 'GET',
        path: `/graphql?query=${encodeURIComponent(q.replace(/[\ud800-\udfff]/g, '').slice(0, 4000))}`,
        headers: h,
      })),
    },
  );

  return { oddChar, oddString, anyString, anyValue, hugeString, restRequest, graphqlRequest, graphqlHeaders, variables };
}

/** The payment-flow generators: every field of every body invalid, so no request can legitimately succeed. */
export function paymentFuzzArbitraries(merchantId: () => string | undefined) {
  const junk = fc.oneof(
    fc.string({ unit: 'binary', maxLength: 30 }),
    fc.integer(),
    fc.double(),
    fc.boolean(),
    fc.constant(null),
    fc.array(fc.integer(), { maxLength: 3 }),
    fc.dictionary(fc.string({ maxLength: 5 }), fc.integer(), { maxKeys: 2 }),
    fc.constantFrom('', ' ', '0', '-1', '1.5', '1e9', 'NaN', "' or 1=1 --", 'A'.repeat(5000), '\u0000', '😀'.repeat(50), '0x' + 'g'.repeat(40)),
  );
  const badMerchant = fc.oneof(
    junk,
    fc.uuid().filter((u) => u !== merchantId()),
  );
  const badAmount = fc.oneof(junk, fc.constantFrom('0', '-5', '00', '1.0', '999', '1000000000000000000000', ' 5000', '5000 '));
  const badOrderNo = fc.oneof(junk, fc.constantFrom('has space', 'x'.repeat(65), '\u00e9t\u00e9', 'tab\t'));
  const badNetwork = fc.oneof(junk, fc.constantFrom('ethereum', 'POLYGON', 'BTC', 'ETHEREUM ', 'SOL'));
  const badWallet = fc.oneof(junk, fc.constantFrom('metamask', 'LEDGER', 'TRUST'));
  const badToken = fc.oneof(junk, fc.constantFrom('0x123', 'T'.repeat(34), 'not-an-address'));

  const bodies: Record<string, fc.Arbitrary<unknown>> = {
    '/merchant/fiat/order': fc.record(
      { merchant_id: badMerchant, order_no: badOrderNo, amount: badAmount, name: junk, email: junk },
      { requiredKeys: ['amount'] },
    ),
    '/merchant/fiat/checkOrderRate': fc.record(
      { merchant_id: badMerchant, transactionID: badOrderNo, tokenAddress: badToken, network: badNetwork },
      { requiredKeys: ['network'] },
    ),
    '/pgqr/fiat/create': fc.record(
      { merchant_id: badMerchant, transactionID: badOrderNo, tokenAddress: badToken, network: badNetwork, walletType: badWallet },
      { requiredKeys: ['walletType'] },
    ),
    '/merchant/fiat/getOrder': fc.record({ merchant_id: badMerchant, order_no: badOrderNo }, { requiredKeys: ['order_no'] }),
  };
  const encoded = fc.oneof(
    { weight: 8, arbitrary: fc.constant('json') },
    { weight: 1, arbitrary: fc.constant('truncated') },
    { weight: 1, arbitrary: fc.constant('text') },
  );
  const credential = fc.constantFrom('merchant', 'checkout', 'none', 'garbage');

  const request = fc
    .record({ route: fc.constantFrom(...Object.keys(bodies)), how: encoded, cred: credential, seed: fc.nat() })
    .chain(({ route, how, cred }) => bodies[route]!.map((b) => ({ route, how, cred, body: b })));
  const gqlVariables = fc.record(
    {
      input: fc.oneof(junk, fc.record({ orderNo: badOrderNo, amount: badAmount, name: junk, email: junk }, { requiredKeys: [] })),
      orderNo: fc.oneof(badOrderNo, fc.constant('NOPE-404')),
      tokenAddress: badToken,
      network: badNetwork,
      walletType: badWallet,
      environment: junk,
    },
    { requiredKeys: [] },
  );

  return { junk, bodies, credential, request, gqlVariables };
}

// ---- running and judging -----------------------------------------------------------------------

export interface Outcome {
  req: FuzzRequest;
  status: number;
  text: string;
  problem?: string;
}
export function judgeRest(o: Outcome): string | undefined {
  if (o.status < 400 || o.status > 499) return `status ${o.status}`;
  let b: { status_code?: unknown; message?: unknown; data?: unknown };
  try {
    b = JSON.parse(o.text) as typeof b;
  } catch {
    return 'body is not JSON';
  }
  if (!b || typeof b !== 'object' || Array.isArray(b)) return 'body is not an object';
  const keys = Object.keys(b).sort().join(',');
  if (keys !== 'data,message,status_code') return `envelope keys ${keys}`;
  if (b.status_code !== o.status) return `status_code ${String(b.status_code)} ≠ HTTP ${o.status}`;
  if (typeof b.message !== 'string' || b.message.trim() === '') return 'empty message';
  if (LEAK.test(b.message) || LEAK.test(JSON.stringify(b.data))) return 'internals in the answer';
  return undefined;
}

export function judgeGraphql(o: Outcome): string | undefined {
  if (o.status >= 500 || o.status < 200) return `status ${o.status}`;
  let b: { errors?: { message?: unknown; extensions?: { code?: unknown } }[] };
  try {
    b = JSON.parse(o.text) as typeof b;
  } catch {
    return 'body is not JSON';
  }
  if (!Array.isArray(b?.errors) || b.errors.length === 0) return 'no errors[]';
  for (const e of b.errors) {
    if (typeof e.extensions?.code !== 'string' || e.extensions.code === '') return 'error without extensions.code';
    if (typeof e.message !== 'string' || e.message === '') return 'error without message';
    if (e.extensions.code === 'INTERNAL') return 'INTERNAL error';
  }
  if (LEAK.test(o.text)) return 'internals in the answer';
  return undefined;
}

/** `<status> <code>` → how many answers, to show what the generated requests actually exercised. */
export function tally(outcomes: Outcome[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const o of outcomes) {
    let code = '?';
    try {
      const b = JSON.parse(o.text) as { data?: { code?: string }; errors?: { extensions?: { code?: string } }[] };
      code = b.data?.code ?? b.errors?.[0]?.extensions?.code ?? '?';
    } catch {
      /* judged elsewhere */
    }
    const key = `${o.status} ${code}`;
    out[key] = (out[key] ?? 0) + 1;
  }
  return out;
}

export interface FuzzKeys {
  /** The merchant's sandbox API key. */
  merchant: string;
  /** A checkout key of one of its orders. */
  checkout: string;
}

/** A generated payment-flow sample as the HTTP request that carries it (truncated or text bodies, one of four credentials). */
export function paymentRestRequest(r: { route: string; how: string; cred: string; body: unknown }, keys: FuzzKeys): FuzzRequest & { body: string } {
  const json = JSON.stringify(r.body);
  const body = r.how === 'truncated' ? json.slice(0, Math.max(1, json.length - 3)) : json;
  const headers: Record<string, string> = { 'content-type': r.how === 'text' ? 'text/plain' : 'application/json' };
  if (r.cred === 'merchant') headers['api-key'] = keys.merchant;
  if (r.cred === 'checkout') headers['api-key'] = keys.checkout;
  if (r.cred === 'garbage') headers['api-key'] = 'cpg_' + 'z'.repeat(64);
  return { method: 'POST', path: '/api/v2/testnet' + r.route, headers, body };
}

/** Sends `reqs` over `concurrency` workers and judges each answer; a request that throws (no answer, timeout) is a failure. */
export async function runAll(
  reqs: FuzzRequest[],
  send: (req: FuzzRequest) => Promise<Outcome>,
  judge: (o: Outcome) => string | undefined,
  concurrency: number,
): Promise<{ failures: Outcome[]; all: Outcome[] }> {
  const failures: Outcome[] = [];
  const all: Outcome[] = [];
  let next = 0;
  const worker = async () => {
    while (next < reqs.length) {
      const req = reqs[next++]!;
      let o: Outcome;
      try {
        o = await send(req);
      } catch (e) {
        o = { req, status: 0, text: '', problem: `request failed: ${(e as Error).message}` };
      }
      o.problem ??= judge(o);
      if (o.problem) failures.push(o);
      all.push(o);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return { failures, all };
}

export const describeFailure = (o: Outcome) => {
  const b = o.req.body;
  const bodyText = b === undefined ? '' : typeof b === 'string' ? b : `<${b.length} bytes>`;
  return `${o.problem}: ${o.req.method} ${o.req.path.slice(0, 120)} headers=${JSON.stringify(o.req.headers).slice(0, 200)} body=${JSON.stringify(bodyText.slice(0, 160))} → ${o.status} ${o.text.slice(0, 300)}`;
};
