import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { MUTATION_AUDIT, redactAudit, storableText } from '../../src/modules/audit/audit.catalogue';
import { canonicalJson, chainFault, GENESIS_HASH, rowHash, type ChainedFields } from '../../src/modules/audit/audit.chain';

it('every GraphQL mutation records an audit action or says why not (a new mutation cannot forget the trail)', () => {
  const sdl = readFileSync(join(__dirname, '../../schema/schema.graphql'), 'utf8');
  const body = /type Mutation \{([\s\S]*?)\n\}/
    .exec(sdl)![1]!
    .replace(/"""[\s\S]*?"""/g, '')
    .replace(/^\s*"[^\n]*"$/gm, '');
  const names = [...body.matchAll(/^ {2}(\w+)[(:]/gm)].map((m) => m[1]!);
  expect(names.length).toBeGreaterThan(10);
  expect(names.filter((n) => !(n in MUTATION_AUDIT))).toEqual([]);
});

it('redacts every member outside the allowlist, at every depth', () => {
  expect(redactAudit({ url: 'https://x', password: 'p', apiKey: 'cpg_1', settings: { logoUrl: 'l', secret: 's' } })).toEqual({
    url: 'https://x',
    password: '[redacted]',
    apiKey: '[redacted]',
    settings: { logoUrl: 'l', secret: '[redacted]' },
  });
});

it('hashes canonically (key order does not matter) and names an edit and a gap', () => {
  expect(canonicalJson({ b: 1, a: [{ d: 2, c: null }] })).toBe('{"a":[{"c":null,"d":2}],"b":1}');
  const f = (seq: number, after: unknown): ChainedFields => ({
    chain: 'm',
    chainSeq: seq,
    occurredAtMs: 1,
    action: 'auth.login',
    merchantId: 'm',
    userId: null,
    apiKeyId: null,
    operator: null,
    subject: null,
    ip: null,
    userAgent: null,
    requestId: null,
    before: null,
    after,
  });
  const h1 = rowHash(GENESIS_HASH, f(1, { a: 1, b: 2 }));
  expect(rowHash(GENESIS_HASH, f(1, { b: 2, a: 1 }))).toBe(h1);
  expect(chainFault(null, { ...f(1, { a: 1, b: 2 }), prevHash: GENESIS_HASH, hash: h1 })).toBeNull();
  expect(chainFault(null, { ...f(1, { a: 9, b: 2 }), prevHash: GENESIS_HASH, hash: h1 })).toMatch(/edited/);
  expect(chainFault({ chainSeq: 1, hash: h1 }, { ...f(3, null), prevHash: 'x', hash: 'y' })).toMatch(/gap/);
});

it('stores what a client sent as PostgreSQL can hold it: lone surrogates and NUL become U+FFFD, pairs stay', () => {
  expect(storableText('a\udfffb\ud800')).toBe('a\ufffdb\ufffd');
  expect(storableText('x\u0000y')).toBe('x\ufffdy');
  expect(storableText('emoji \ud83d\ude00 ok')).toBe('emoji \ud83d\ude00 ok');
  expect(redactAudit({ email: 'e\udfff@x' })).toEqual({ email: 'e\ufffd@x' });
});
