import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';

/**
 * The contract test: every REST answer the suite receives through test/support/http.ts is checked
 * against schema/openapi.json (the committed document, itself checked fresh by
 * test/unit/openapi-document.test.ts), so the document and the gateway cannot drift. A status the
 * path does not document, an error code it does not list, or a body off its schema throws in the
 * test that made the request. Validators are compiled once per (operation, status) and reused.
 */

type Json = Record<string, any>;
const doc: Json = JSON.parse(readFileSync(join(__dirname, '../../schema/openapi.json'), 'utf8'));
const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
addFormats(ajv);
ajv.addSchema(doc, 'openapi.json');

const templates = Object.keys(doc.paths).map((template) => ({
  template,
  re: new RegExp('^' + template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{[^}]+\\?\}/g, '[^/]+') + '/?$'),
}));
const pointer = (...parts: string[]) => parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');
const validators = new Map<string, ValidateFunction>();

function validator(ref: string): ValidateFunction {
  let v = validators.get(ref);
  if (!v) {
    v = ajv.getSchema(`openapi.json#/${ref}`);
    if (!v) throw new Error(`openapi-contract: no schema at ${ref}`);
    validators.set(ref, v);
  }
  return v;
}

// An answer to a path or method the document does not have (404/405) is still the error envelope.
const ANY_ERROR = ajv.compile({
  type: 'object',
  properties: {
    status_code: { type: 'integer' },
    message: { type: 'string' },
    data: { type: 'object', properties: { code: { type: 'string' } }, required: ['code'] },
  },
  required: ['status_code', 'message', 'data'],
});

export class ContractViolation extends Error {
  override readonly name = 'ContractViolation';
}

/** Checks one answer; throws ContractViolation on a mismatch. Paths outside `/api/v2` are not part of the document. */
export function checkRestResponse(method: string, url: string, status: number, contentType: string | null, body: unknown): void {
  const path = new URL(url, 'http://x').pathname;
  if (!path.startsWith('/api/v2/') && path !== '/api/v2') return;
  const fail = (why: string) => {
    throw new ContractViolation(`${method} ${path} → ${status}: ${why}\nbody: ${JSON.stringify(body)?.slice(0, 2000)}`);
  };
  // A literal path and a parameter can both match (`/team/invites/accept`, `/team/invites/{invite_id}`):
  // the template that has this method is the route the server took.
  const matching = templates.filter((t) => t.re.test(path));
  const match = matching.find((t) => doc.paths[t.template][method.toLowerCase()]) ?? matching[0];
  const op = match && doc.paths[match.template][method.toLowerCase()];
  if (!op) {
    if (status < 400) fail('path and method are not in schema/openapi.json');
    if (!ANY_ERROR(body)) fail(`not the error envelope: ${ajv.errorsText(ANY_ERROR.errors)}`);
    return;
  }
  let response = op.responses[String(status)];
  if (!response) fail(`status ${status} is not documented (documented: ${Object.keys(op.responses).join(', ')})`);
  let responseRef = pointer('paths', match.template, method.toLowerCase(), 'responses', String(status));
  if (response.$ref) {
    responseRef = response.$ref.slice(2);
    response = doc.components.responses[response.$ref.split('/').pop()];
  }
  const types = Object.keys(response.content ?? {});
  const type = (contentType ?? '').split(';')[0]!.trim();
  if (!types.includes(type)) fail(`content type ${JSON.stringify(type)} is not documented (documented: ${types.join(', ')})`);
  if (type !== 'application/json') return;
  const v = validator(`${responseRef}/content/${pointer('application/json')}/schema`);
  if (!v(body)) fail(ajv.errorsText(v.errors, { separator: '; ' }));
}

/** A fetch that checks every answer against the document (for clients under test, such as the SDK). */
export function contractFetch(inner: typeof fetch = globalThis.fetch): typeof fetch {
  return async (input, init) => {
    const request = new Request(input, init);
    const res = await inner(request);
    const type = res.headers.get('content-type');
    const copy = res.clone();
    const body = type?.startsWith('application/json') ? await copy.json() : await copy.text();
    checkRestResponse(request.method, request.url, res.status, type, body);
    return res;
  };
}
