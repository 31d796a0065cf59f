import fc from 'fast-check';
import { Kind, parse, print, type OperationDefinitionNode } from 'graphql';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import WebSocket from 'ws';
import { countRows } from '../test/support/db.js';
import { rawHttp } from '../test/support/http.js';
import {
  LEAK,
  authFuzzArbitraries,
  describeFailure,
  judgeGraphql,
  judgeRest,
  paymentFuzzArbitraries,
  paymentRestRequest,
  runAll,
  tally,
  type FuzzKeys,
  type FuzzRequest,
  type Outcome,
} from './fuzz.generators.js';
import { benchDatabase, percentile, startGatewayProcess } from './support.js';

/**
 * `npm run bench:fuzz`: 10,000 generated malformed requests against the built gateway in
 * its own process: REST (auth routes, unknown paths, payment flow), GraphQL over HTTP (auth and
 * payment operations), and graphql-ws (operations on sockets with generated credentials, plus
 * messages outside the protocol). Every answer must be a 4xx envelope / an error with
 * `extensions.code` (never INTERNAL), no request may go unanswered past its timeout, no socket may
 * close with 4500/1011, and no row may be written. The generators and judges are those of the fuzz
 * tests (bench/fuzz.generators.ts), with other seeds and counts. Last line: one JSON object.
 * FUZZ_REQUESTS scales the total (default 10000); FUZZ_SEED changes the samples.
 */
const TOTAL = Number(process.env.FUZZ_REQUESTS ?? 10_000);
const SEED = Number(process.env.FUZZ_SEED ?? 9_000_001);
const CONCURRENCY = 8;
/** A request unanswered this long counts as a hang. */
const TIMEOUT_MS = 15_000;
/** Shares of the total per kind. */
const MIX = { restAuth: 0.3, restPayment: 0.2, graphqlAuth: 0.2, graphqlPayment: 0.1, ws: 0.2 } as const;
const OWNER_EMAIL = 'fuzz-owner@merchant.test';
const MASTER_KEY = '33'.repeat(32);
const JWT_SECRET = 'fuzz-bench-jwt-secret-fuzz-bench-jwt-secret-0123';

/** The named operations of test/graphql/<file>.graphql (the codegen documents the fuzz tests print), each printed alone. */
function operations(file: string, names: string[]): string[] {
  const doc = parse(readFileSync(join(__dirname, '..', '..', 'test', 'graphql', file), 'utf8'));
  return names.map((name) => {
    const op = doc.definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION && d.name?.value === name);
    if (!op) throw new Error(`${file} has no operation ${name}`);
    return print(op);
  });
}
const AUTH_DOCS = operations('auth.graphql', ['Login', 'RefreshToken', 'RotateApiKey', 'Me']);
const PAYMENT_DOCS = [
  ...operations('payments.graphql', ['CreateOrder', 'LockQuote', 'CreateDeposit', 'Order']),
  ...operations('order-updates.graphql', ['OrderUpdated']),
];

const sampleCount = (share: number) => Math.round(TOTAL * share);

// ---- graphql-ws -------------------------------------------------------------------------------

/** One graphql-ws socket: its connection params and the messages it sends, in order. */
interface WsScript {
  params: unknown;
  messages: string[];
}

interface WsResult {
  sent: number;
  outcomes: Outcome[];
  closeCode?: number;
}

function wsScripts(
  keys: FuzzKeys,
  auth: ReturnType<typeof authFuzzArbitraries>,
  payment: ReturnType<typeof paymentFuzzArbitraries>,
  count: number,
  seed: number,
): WsScript[] {
  const op = (payload: unknown) => ({ type: 'subscribe', payload });
  const authOp = auth.graphqlRequest.map((r) => {
    // The HTTP generator's bodies: an operation when the body is an object, else the raw text as a message.
    const text = typeof r.body === 'string' ? r.body : r.body === undefined ? '' : Buffer.from(r.body).toString('latin1');
    try {
      const parsed = JSON.parse(text) as unknown;
      return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? op(parsed) : text;
    } catch {
      return text;
    }
  });
  const paymentOp = fc.record({ query: fc.constantFrom(...PAYMENT_DOCS), variables: payment.gqlVariables }).map(op);
  const notProtocol = fc.oneof(
    fc.constantFrom(
      '{"type":"connection_init"}',
      '{"type":"subscribe"}',
      '{"type":"subscribe","id":1,"payload":{}}',
      '{"type":"complete","id":"nope"}',
      '{"type":"ping"}',
      '{"type":"pong"}',
      '{"type":"next","id":"x","payload":{}}',
      '[]',
      'null',
      '{}',
    ),
    fc.string({ unit: 'binary', maxLength: 60 }),
    fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
  );
  const params = fc.oneof(
    fc.constant({}),
    fc.constant({ 'api-key': keys.merchant }),
    fc.constant({ key: keys.checkout }),
    fc.record({ 'api-key': auth.anyValue, key: auth.anyValue, authorization: auth.anyValue }, { requiredKeys: [] }),
    auth.anyValue,
  );
  // A valid credential only with payment operations (their variables are all invalid): an auth
  // operation under a real key could succeed and write (rotateApiKey).
  const script = params.chain((p) => {
    const withKey = p !== null && typeof p === 'object' && (Object.values(p).includes(keys.merchant) || Object.values(p).includes(keys.checkout));
    const message = withKey
      ? fc.oneof({ weight: 9, arbitrary: paymentOp }, { weight: 1, arbitrary: notProtocol })
      : fc.oneof({ weight: 6, arbitrary: authOp }, { weight: 3, arbitrary: paymentOp }, { weight: 1, arbitrary: notProtocol });
    return fc
      .array(message, { minLength: 1, maxLength: 12 })
      .map((ms) => ({ params: p, messages: ms.map((m, i) => (typeof m === 'string' ? m : JSON.stringify({ ...m, id: `op${i}` }))) }));
  });
  const out: WsScript[] = [];
  let messages = 0;
  for (const s of fc.sample(script, { seed, numRuns: Math.max(1, count) })) {
    if (messages >= count) break;
    const take = s.messages.slice(0, count - messages);
    out.push({ params: s.params, messages: take });
    messages += take.length;
  }
  return out;
}

/** A graphql-ws answer as an Outcome for the GraphQL judge; status 200 stands for "answered". */
const wsOutcome = (message: string, text: string, problem?: string): Outcome => ({
  req: { method: 'WS', path: '/graphql', headers: {}, body: message },
  status: 200,
  text,
  problem,
});

/** Speaks graphql-transport-ws by hand, so messages outside the protocol can be sent as they are. */
function runWsScript(base: string, script: WsScript): Promise<WsResult> {
  return new Promise((resolve) => {
    const ws = new WebSocket(base.replace(/^http/, 'ws') + '/graphql', 'graphql-transport-ws');
    const result: WsResult = { sent: 0, outcomes: [] };
    let index = -1;
    let timer: NodeJS.Timeout | undefined;
    let current: { id?: string; message: string; errors: unknown[]; gotNext: boolean } | undefined;
    const finish = () => {
      clearTimeout(timer);
      resolve(result);
    };
    const judgeCurrent = (text: string, problem?: string) => {
      if (!current) return;
      result.outcomes.push(wsOutcome(current.message, text, problem));
      current = undefined;
    };
    const next = () => {
      clearTimeout(timer);
      index += 1;
      if (index >= script.messages.length) return ws.close(1000);
      const message = script.messages[index]!;
      let parsed = null as { id?: string; type?: string } | null;
      try {
        parsed = JSON.parse(message) as typeof parsed;
      } catch {
        /* not JSON: the server closes the socket */
      }
      current = { id: parsed?.id, message, errors: [], gotNext: false };
      result.sent += 1;
      ws.send(message);
      // `complete` and `pong` have no answer in the protocol: sent is done.
      if (parsed?.type === 'complete' || parsed?.type === 'pong') {
        judgeCurrent('');
        return setImmediate(next);
      }
      timer = setTimeout(() => {
        judgeCurrent('', `no answer within ${TIMEOUT_MS} ms`);
        ws.terminate();
      }, TIMEOUT_MS);
    };
    ws.on('open', () => ws.send(JSON.stringify({ type: 'connection_init', payload: script.params })));
    ws.on('message', (data) => {
      let msg: { type?: string; id?: string; payload?: unknown };
      try {
        msg = JSON.parse(String(data)) as typeof msg;
      } catch {
        return judgeCurrent(String(data), 'server message is not JSON');
      }
      if (msg.type === 'connection_ack') return next();
      if (msg.type === 'ping') return ws.send('{"type":"pong"}');
      if (msg.type === 'pong') {
        judgeCurrent('');
        return next();
      }
      if (!current || msg.id !== current.id) return;
      if (msg.type === 'next') {
        const errors = (msg.payload as { errors?: unknown[] })?.errors;
        current.gotNext = true;
        if (errors) current.errors.push(...errors);
        return;
      }
      if (msg.type === 'error') {
        judgeCurrent(JSON.stringify({ errors: msg.payload }));
        return next();
      }
      if (msg.type === 'complete') {
        judgeCurrent(JSON.stringify({ errors: current.errors }));
        return next();
      }
    });
    ws.on('close', (code) => {
      result.closeCode = code;
      // A message outside the protocol may close the socket (4400): that is its answer.
      if (current) judgeCurrent('', code === 4500 || code === 1011 ? `socket closed with ${code}` : undefined);
      finish();
    });
    ws.on('error', () => undefined);
  });
}

/** The GraphQL judge, except that a socket closed over a message outside the protocol counts as refused. */
function judgeWs(o: Outcome): string | undefined {
  if (o.problem) return o.problem;
  if (o.text === '') return undefined;
  return judgeGraphql(o);
}

// ---- main -------------------------------------------------------------------------------------

async function main() {
  const started = Date.now();
  const db = await benchDatabase('cpg_bench_fuzz');
  const env = { DATABASE_URL: db.url, MASTER_KEY, JWT_SECRET, LOG_LEVEL: 'warn' };
  const gw = await startGatewayProcess({
    ...env,
    NODE_ENV: 'test',
    ROLE: 'api',
    RATE_LIMIT_STORE: 'memory',
    RATE_LIMIT_PUBLIC_PER_MIN: '1000000',
    RATE_LIMIT_AUTH_PER_MIN: '1000000',
    RATE_LIMIT_LOGIN_PER_MIN: '1000000',
    RATE_LIMIT_LOGIN_ACCOUNT_PER_MIN: '1000000',
    RATE_LIMIT_MERCHANT_PER_MIN: '10000000',
    RATE_LIMIT_GRAPHQL_PER_MIN: '1000000',
    DEV_CHAINS: 'false',
    RATE_SOURCES: 'none',
  });
  try {
    const cli = (args: string[]) =>
      execFileSync(process.execPath, [join(__dirname, '..', 'src', 'cli', 'cli.js'), ...args], { env: { ...process.env, ...env } }).toString();
    const merchant = JSON.parse(
      cli(['merchant', 'create', '--name', 'Fuzz', '--email', OWNER_EMAIL, '--password', 'correct horse battery staple', '--json']).trim().split('\n').pop()!,
    ) as {
      merchant_id: string;
      sandbox_api_key: string;
    };
    const order = await rawHttp(gw.url, {
      method: 'POST',
      path: '/api/v2/testnet/merchant/fiat/order',
      headers: { 'content-type': 'application/json', 'api-key': merchant.sandbox_api_key },
      body: JSON.stringify({ merchant_id: merchant.merchant_id, order_no: 'FUZZ-1', amount: '50000' }),
    });
    const keys: FuzzKeys = { merchant: merchant.sandbox_api_key, checkout: (order.body as { data: { key: string } }).data.key };
    const before = await countRows(db.url);

    const auth = authFuzzArbitraries(OWNER_EMAIL, AUTH_DOCS);
    const payment = paymentFuzzArbitraries(() => merchant.merchant_id);
    const paymentGraphql = fc
      .record({ doc: fc.constantFrom(...PAYMENT_DOCS.slice(0, 4)), variables: payment.gqlVariables, cred: payment.credential })
      .map(({ doc, variables, cred }): FuzzRequest => {
        const headers: Record<string, string> = { 'content-type': 'application/json' };
        if (cred === 'merchant') headers['api-key'] = keys.merchant;
        if (cred === 'checkout') headers['x-checkout-key'] = keys.checkout;
        if (cred === 'garbage') headers['api-key'] = 'cpg_' + 'z'.repeat(64);
        return { method: 'POST', path: '/graphql', headers, body: JSON.stringify({ query: doc, variables }) };
      });

    const latencies: number[] = [];
    const send = async (req: FuzzRequest): Promise<Outcome> => {
      const t0 = performance.now();
      const res = await rawHttp(gw.url, req, TIMEOUT_MS);
      latencies.push(performance.now() - t0);
      return { req, status: res.status, text: res.text };
    };
    const phases: Record<string, { requests: number; failures: Outcome[]; all: Outcome[]; ms: number }> = {};
    const phase = async (name: string, reqs: FuzzRequest[], judge: (o: Outcome) => string | undefined) => {
      const t0 = Date.now();
      console.log(`${name}: ${reqs.length} requests …`);
      const r = await runAll(reqs, send, judge, CONCURRENCY);
      phases[name] = { requests: reqs.length, ...r, ms: Date.now() - t0 };
      console.log(`  ${r.failures.length} failures in ${Date.now() - t0} ms; ${JSON.stringify(tally(r.all))}`);
    };
    await phase('rest_auth', fc.sample(auth.restRequest, { seed: SEED, numRuns: sampleCount(MIX.restAuth) }), judgeRest);
    await phase(
      'rest_payment',
      fc.sample(payment.request, { seed: SEED + 1, numRuns: sampleCount(MIX.restPayment) }).map((r) => paymentRestRequest(r, keys)),
      judgeRest,
    );
    await phase('graphql_auth', fc.sample(auth.graphqlRequest, { seed: SEED + 2, numRuns: sampleCount(MIX.graphqlAuth) }), judgeGraphql);
    await phase('graphql_payment', fc.sample(paymentGraphql, { seed: SEED + 3, numRuns: sampleCount(MIX.graphqlPayment) }), judgeGraphql);

    // graphql-ws: CONCURRENCY sockets at a time, each running its script to the end.
    const wsStarted = Date.now();
    const wsTarget = TOTAL - Object.values(phases).reduce((n, p) => n + p.requests, 0);
    console.log(`graphql_ws: ${wsTarget} messages …`);
    const wsResults: WsResult[] = [];
    const wsSent = () => wsResults.reduce((n, r) => n + r.sent, 0);
    // Sockets closed early (a message outside the protocol) leave messages unsent: more rounds until the count is reached.
    for (let round = 0; round < 50 && wsSent() < wsTarget; round++) {
      const scripts = wsScripts(keys, auth, payment, wsTarget - wsSent(), SEED + 5 + round);
      let nextScript = 0;
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (nextScript < scripts.length) wsResults.push(await runWsScript(gw.url, scripts[nextScript++]!));
        }),
      );
    }
    const wsOutcomes = wsResults.flatMap((r) => r.outcomes);
    const wsFailures = wsOutcomes.map((o) => ({ ...o, problem: judgeWs(o) })).filter((o) => o.problem);
    const closeCodes: Record<string, number> = {};
    for (const r of wsResults) closeCodes[String(r.closeCode)] = (closeCodes[String(r.closeCode)] ?? 0) + 1;
    phases.graphql_ws = { requests: wsResults.reduce((n, r) => n + r.sent, 0), failures: wsFailures, all: wsOutcomes, ms: Date.now() - wsStarted };
    console.log(
      `  ${wsFailures.length} failures in ${Date.now() - wsStarted} ms; answers ${JSON.stringify(tally(wsOutcomes.filter((o) => o.text !== '')))}; socket close codes ${JSON.stringify(closeCodes)}`,
    );

    const after = await countRows(db.url);
    const rowsWritten = Object.keys({ ...before, ...after }).filter((t) => before[t] !== after[t]);
    const stillUp = (await fetch(`${gw.url}/healthz`)).status === 200;
    const failures = Object.values(phases).flatMap((p) => p.failures);
    for (const f of failures.slice(0, 20)) console.log(`FAIL ${describeFailure(f)}`);
    const all = Object.values(phases).flatMap((p) => p.all);
    const sorted = latencies.sort((a, b) => a - b);
    const summary = {
      requests: Object.values(phases).reduce((n, p) => n + p.requests, 0),
      by_kind: Object.fromEntries(Object.entries(phases).map(([k, p]) => [k, p.requests])),
      failures: failures.length,
      five_xx: all.filter((o) => o.status >= 500).length,
      hangs: failures.filter((f) => /no answer|request failed/.test(f.problem ?? '')).length,
      internals_leaked: all.filter((o) => LEAK.test(o.text)).length,
      ws_sockets: wsResults.length,
      ws_close_codes: closeCodes,
      rows_written: rowsWritten,
      gateway_up_after: stillUp,
      http_p50_ms: Number(percentile(sorted, 50).toFixed(1)),
      http_p99_ms: Number(percentile(sorted, 99).toFixed(1)),
      http_max_ms: Number((sorted.at(-1) ?? 0).toFixed(1)),
      seconds: Number(((Date.now() - started) / 1000).toFixed(1)),
      seed: SEED,
    };
    console.log(JSON.stringify(summary));
    if (failures.length || rowsWritten.length || !stillUp) process.exitCode = 1;
  } finally {
    await gw.stop();
    await db.release();
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
