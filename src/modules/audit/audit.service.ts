import { Readable } from 'node:stream';
import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { requirePermission } from '../../common/access.js';
import type { RequestContext } from '../../common/context.js';
import { DomainError } from '../../common/errors.js';
import { parseInput } from '../../common/validation.js';
import { AUDIT_ACTIONS, redactAudit, storableText, type AuditAction } from './audit.catalogue.js';
import { chainFault, GENESIS_HASH, rowHash, type ChainedFields } from './audit.chain.js';

/**
 * The audit trail (docs/security.md "Audit trail"): `recordAudit` appends one hash-chained row in the
 * caller's transaction; `AuditService` lists, exports and verifies them.
 */

/** Who acted, as a request context tells it. */
export type AuditSource = Pick<RequestContext, 'caller' | 'ip' | 'requestId'> & Partial<Pick<RequestContext, 'userAgent' | 'operatorName'>>;

export interface AuditDetail {
  /** The merchant the action concerns; default the caller's. null: none (an operator's action, a failed login for an unknown email). */
  merchantId?: string | null;
  /** The dashboard user the action concerns; default the caller's (a login names the user who logged in). */
  userId?: string | null;
  /** What was acted on (a payment link id, `production`, a network…). */
  subject?: string | null;
  /** State before and after; redacted by allowlist (audit.catalogue.ts) before it is stored. */
  before?: unknown;
  after?: unknown;
}

/** The chain of operator actions that name no merchant. */
export const OPERATOR_CHAIN = 'operator';

/**
 * Appends one row to the audit trail, in `em`'s transaction when it has one (so the row commits or
 * rolls back with the change it describes), else in a transaction of its own. The chain is extended
 * under a transaction-scoped advisory lock per chain: concurrent writers of one merchant queue for
 * the previous hash (the unique `(chain, chain_seq)` would refuse a fork anyway); merchants do not
 * wait for each other. One line at the call site: `await recordAudit(tx, ctx, 'api_key.rotated', { after })`.
 */
export async function recordAudit(em: EntityManager, source: AuditSource, action: AuditAction, detail: AuditDetail = {}): Promise<void> {
  if (!em.isInTransaction()) {
    await em.transactional((tx) => recordAudit(tx, source, action, detail));
    return;
  }
  const { caller } = source;
  const callerMerchant = caller.kind === 'anonymous' ? null : caller.merchantId;
  const merchantId = detail.merchantId !== undefined ? detail.merchantId : callerMerchant;
  const chain = merchantId ?? OPERATOR_CHAIN;
  await em.execute(`select pg_advisory_xact_lock(hashtext('audit:' || ?::text))`, [chain]);
  const [last] = await em.execute<{ chain_seq: string; hash: string }[]>(
    `select chain_seq::text, hash from audit_events where chain = ? order by audit_events.chain_seq desc limit 1`,
    [chain],
  );
  const fields: ChainedFields = {
    chain,
    chainSeq: last ? Number(last.chain_seq) + 1 : 1,
    occurredAtMs: Date.now(),
    action,
    merchantId,
    userId: detail.userId !== undefined ? detail.userId : caller.kind === 'dashboard' ? caller.userId : null,
    apiKeyId: caller.kind === 'apiKey' ? caller.apiKeyId : null,
    operator: source.operatorName ?? null,
    subject: textOrNull(detail.subject),
    ip: textOrNull(source.ip),
    userAgent: textOrNull(source.userAgent),
    requestId: textOrNull(source.requestId),
    before: redactAudit(detail.before),
    after: redactAudit(detail.after),
  };
  const prevHash = last?.hash ?? GENESIS_HASH;
  await em.execute(
    `insert into audit_events (chain, chain_seq, occurred_at, action, merchant_id, user_id, api_key_id, operator, subject, ip, user_agent, request_id, before, after, prev_hash, hash)
     values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?::jsonb, ?::jsonb, ?, ?)`,
    [
      fields.chain,
      fields.chainSeq,
      new Date(fields.occurredAtMs),
      action,
      merchantId,
      fields.userId,
      fields.apiKeyId,
      fields.operator,
      fields.subject,
      fields.ip,
      fields.userAgent,
      fields.requestId,
      jsonOrNull(fields.before),
      jsonOrNull(fields.after),
      prevHash,
      rowHash(prevHash, fields),
    ],
  );
}

const textOrNull = (s: string | null | undefined): string | null => (s ? storableText(s) : null);

/**
 * Flushes the changes made through `em` (entities loaded and changed, `em.create`d) and records the
 * action, in one transaction: for services that change entities rather than run SQL in a
 * `transactional` callback.
 */
export async function flushAudited(em: EntityManager, source: AuditSource, action: AuditAction, detail: AuditDetail = {}): Promise<void> {
  if (em.isInTransaction()) {
    await em.flush();
    await recordAudit(em, source, action, detail);
    return;
  }
  await em.begin();
  try {
    await em.flush();
    await recordAudit(em, source, action, detail);
    await em.commit();
  } catch (e) {
    await em.rollback();
    throw e;
  }
}

const jsonOrNull = (v: unknown): string | null => (v === null || v === undefined ? null : JSON.stringify(v));

export interface AuditEventView {
  id: string;
  occurredAt: Date;
  action: string;
  merchantId: string | null;
  userId: string | null;
  apiKeyId: string | null;
  operator: string | null;
  subject: string | null;
  ip: string | null;
  userAgent: string | null;
  before: unknown;
  after: unknown;
  chainSeq: number;
  hash: string;
}

export const auditFilterInput = z
  .object({
    actions: z.array(z.enum(AUDIT_ACTIONS)).max(AUDIT_ACTIONS.length).optional(),
    from: z.date().optional(),
    to: z.date().optional(),
  })
  .strict();
export type AuditFilter = z.input<typeof auditFilterInput>;

const listInput = z
  .object({ first: z.number().int().min(1).max(100).default(20), after: z.string().max(100).optional(), filter: auditFilterInput.default({}) })
  .strict();
export type AuditListCommand = z.input<typeof listInput>;

export interface AuditPage {
  events: (AuditEventView & { cursor: string })[];
  hasNextPage: boolean;
  count: () => Promise<number>;
}

export interface AuditFault {
  id: string;
  chain: string;
  chainSeq: number;
  reason: string;
}

export interface AuditVerification {
  chains: number;
  rows: number;
  /** The first row (by chain, then position) that does not fit its chain; null: the trail is intact. */
  fault: AuditFault | null;
}

interface Row {
  id: string;
  chain: string;
  chain_seq: string;
  occurred_at: Date;
  action: string;
  merchant_id: string | null;
  user_id: string | null;
  api_key_id: string | null;
  operator: string | null;
  subject: string | null;
  ip: string | null;
  user_agent: string | null;
  request_id: string | null;
  before: unknown;
  after: unknown;
  prev_hash: string;
  hash: string;
}

const COLUMNS = `id::text, chain, chain_seq::text, occurred_at, action, merchant_id, user_id, api_key_id, operator, subject, ip, user_agent, request_id, before, after, prev_hash, hash`;

const fieldsOf = (r: Row): ChainedFields => ({
  chain: r.chain,
  chainSeq: Number(r.chain_seq),
  occurredAtMs: new Date(r.occurred_at).getTime(),
  action: r.action,
  merchantId: r.merchant_id,
  userId: r.user_id,
  apiKeyId: r.api_key_id,
  operator: r.operator,
  subject: r.subject,
  ip: r.ip,
  userAgent: r.user_agent,
  requestId: r.request_id,
  before: r.before,
  after: r.after,
});

/** What a reader sees of a row: the hashed fields (less the chain's own bookkeeping), its id and hash. */
const viewOf = (r: Row): AuditEventView => {
  const { chain: _chain, requestId: _requestId, occurredAtMs, ...fields } = fieldsOf(r);
  return { id: r.id, occurredAt: new Date(occurredAtMs), hash: r.hash, ...fields };
};

const encodeCursor = (id: string): string => Buffer.from(`audit:${id}`).toString('base64url');
function decodeCursor(cursor: string): string {
  const m = /^audit:(\d{1,19})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!m || !/^[A-Za-z0-9_-]+$/.test(cursor)) throw new DomainError('BAD_USER_INPUT', 'Invalid cursor: pass a cursor this listing returned');
  return m[1]!;
}

/** `where` of a merchant's events under a filter, and its parameters. */
function whereOf(merchantId: string, filter: z.output<typeof auditFilterInput>): { sql: string; params: unknown[] } {
  const parts = ['merchant_id = ?'];
  const params: unknown[] = [merchantId];
  if (filter.actions?.length) {
    parts.push(`action = any(?::text[])`);
    params.push(`{${filter.actions.join(',')}}`);
  }
  if (filter.from) {
    parts.push('occurred_at >= ?');
    params.push(filter.from);
  }
  if (filter.to) {
    parts.push('occurred_at < ?');
    params.push(filter.to);
  }
  return { sql: parts.join(' and '), params };
}

/** A CSV cell: quoted, and prefixed with `'` when a spreadsheet would run it as a formula (as the orders export). */
export function auditCsvCell(value: unknown): string {
  if (value === null || value === undefined) return '';
  let s = typeof value === 'string' ? value : value instanceof Date ? value.toISOString() : JSON.stringify(value);
  if (/^[=+\-@\t\r]/.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) || s.startsWith("'") ? `"${s.replace(/"/g, '""')}"` : s;
}

const CSV_COLUMNS = [
  'occurred_at',
  'action',
  'user_id',
  'api_key_id',
  'operator',
  'subject',
  'ip',
  'user_agent',
  'before',
  'after',
  'chain_seq',
  'hash',
  'id',
] as const;

export class AuditService {
  /** A merchant's trail, newest first (owners and admins of the merchant; another merchant's rows are never read). */
  async list(ctx: RequestContext, cmd: AuditListCommand): Promise<AuditPage> {
    const merchantId = requirePermission(ctx, 'audit.read').merchantId;
    const { first, after, filter } = parseInput(listInput, cmd);
    const where = whereOf(merchantId, filter);
    const keyset = after ? ` and id < ?` : '';
    const rows = await ctx.em.execute<Row[]>(
      `select ${COLUMNS} from audit_events where ${where.sql}${keyset} order by audit_events.id desc limit ${first + 1}`,
      [...where.params, ...(after ? [decodeCursor(after)] : [])],
    );
    const page = rows.slice(0, first);
    return {
      events: page.map((r) => ({ ...viewOf(r), cursor: encodeCursor(r.id) })),
      hasNextPage: rows.length > first,
      count: async () => {
        const [{ n }] = (await ctx.em.execute<{ n: number }[]>(`select count(*)::int as n from audit_events where ${where.sql}`, where.params)) as [
          { n: number },
        ];
        return n;
      },
    };
  }

  /**
   * The merchant's trail as CSV (newest first, the listing's filter), read in pages of 1,000 while the
   * client takes them. The export itself is recorded first.
   */
  async exportCsv(ctx: RequestContext, filter: AuditFilter): Promise<{ filename: string; rows: Readable }> {
    const merchantId = requirePermission(ctx, 'audit.read').merchantId;
    const f = parseInput(auditFilterInput, filter);
    await recordAudit(ctx.em, ctx, 'export.audit_csv', { after: { filters: { ...f } } });
    const where = whereOf(merchantId, f);
    const em = ctx.em;
    async function* lines(): AsyncGenerator<string> {
      yield CSV_COLUMNS.join(',') + '\n';
      let before: string | null = null;
      for (;;) {
        const rows: Row[] = await em.execute<Row[]>(
          `select ${COLUMNS} from audit_events where ${where.sql}${before ? ' and id < ?' : ''} order by audit_events.id desc limit 1000`,
          [...where.params, ...(before ? [before] : [])],
        );
        if (!rows.length) return;
        yield rows
          .map(
            (r) =>
              [r.occurred_at, r.action, r.user_id, r.api_key_id, r.operator, r.subject, r.ip, r.user_agent, r.before, r.after, r.chain_seq, r.hash, r.id]
                .map(auditCsvCell)
                .join(',') + '\n',
          )
          .join('');
        before = rows[rows.length - 1]!.id;
      }
    }
    return { filename: `audit-${new Date().toISOString().slice(0, 10)}.csv`, rows: Readable.from(lines()) };
  }

  /**
   * Walks every chain (or one) from its first row: each row must follow the previous one (`chain_seq`
   * one more, `prev_hash` its hash) and hash to its stored hash. Stops at the first fault.
   */
  async verify(em: EntityManager, opts: { chain?: string; batch?: number } = {}): Promise<AuditVerification> {
    const chains = opts.chain
      ? [opts.chain]
      : (await em.execute<{ chain: string }[]>(`select distinct chain from audit_events order by chain`)).map((r) => r.chain);
    const batch = opts.batch ?? 1000;
    let rows = 0;
    for (const chain of chains) {
      let prev: { chainSeq: number; hash: string } | null = null;
      for (;;) {
        const page: Row[] = await em.execute<Row[]>(
          `select ${COLUMNS} from audit_events where chain = ? and chain_seq > ? order by audit_events.chain_seq limit ${batch}`,
          [chain, prev?.chainSeq ?? 0],
        );
        if (!page.length) break;
        for (const r of page) {
          const f = fieldsOf(r);
          const reason = chainFault(prev, { ...f, prevHash: r.prev_hash, hash: r.hash });
          if (reason) return { chains: chains.length, rows, fault: { id: r.id, chain, chainSeq: f.chainSeq, reason } };
          rows++;
          prev = { chainSeq: f.chainSeq, hash: r.hash };
        }
      }
    }
    return { chains: chains.length, rows, fault: null };
  }
}
