import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ErrorCodes, type ErrorCode } from '../common/errors.js';
import { permissionTableMarkdown } from '../common/permissions.js';
import { configMarkdownTable } from '../config/index.js';
import { ORDER_TRANSITIONS } from '../modules/orders/order.transitions.js';
import { REFUND_TRANSITIONS } from '../modules/refunds/refund.transitions.js';
import { SWEEP_TRANSITIONS } from '../modules/sweeps/sweep.transitions.js';
import { WEBHOOK_DELIVERY_TRANSITIONS } from '../modules/webhooks/webhook.transitions.js';

/**
 * The parts of docs/ written from the code, so they cannot drift from it: each lives between
 * `<!-- name:start -->` and `<!-- name:end -->` in its file. `npm run cli -- docs:write` rewrites them;
 * test/unit/docs.test.ts fails when one is stale.
 */
export interface GeneratedSection {
  /** Path from the repository root. */
  file: string;
  marker: string;
  render(): string;
}

/**
 * A transition table as markdown, one row per state in the table's own order. Takes any
 * `Record<state, readonly state[]>` (orders, webhook deliveries, and the tables still to come), so a
 * new stateful thing only adds a GENERATED_SECTIONS entry.
 */
export function transitionTable(table: Readonly<Record<string, readonly string[]>>): string {
  const rows = Object.entries(table).map(([from, to]) => `| \`${from}\` | ${to.length ? to.map((s) => `\`${s}\``).join(', ') : '— (final)'} |`);
  return ['| From | May move to |', '|---|---|', ...rows].join('\n');
}

/** What a client should read into a code, where its name alone does not say it. */
const ERROR_NOTES: Partial<Record<ErrorCode, string>> = {
  VALIDATION_FAILED: 'with `data.fields`',
  CHECKOUT_KEY_EXPIRED: 'the scoped checkout key outlived its 30 minutes',
  INVALID_PASSWORD: 'the account password given again (settlement address, `reauthenticate`) is wrong',
  FORBIDDEN: 'also: the member’s role lacks the permission (`data.permission`, `data.role`; docs/teams.md)',
  REAUTHENTICATION_REQUIRED:
    'a sensitive operation (rotate an API key, change the notification URL, the sweep schedule or the team, manage second factors) needs `reauthenticate` (the password, and the second factor when the user has one) within the last `REAUTH_WINDOW_S` on this session',
  SECOND_FACTOR_REQUIRED: 'the password was right; the login (with `challengeToken`) or the re-authentication needs the second factor too',
  INVALID_SECOND_FACTOR: 'wrong TOTP code, recovery code or passkey answer',
  SECOND_FACTOR_REUSED: 'that TOTP code or recovery code was used already',
  SECOND_FACTOR_ENROLMENT_REQUIRED: 'the merchant requires a second factor: this session may only enrol one',
  CHALLENGE_EXPIRED: 'the login second step or passkey ceremony is unknown, spent, expired or out of attempts',
  SECOND_FACTOR_STATE: 'the enrolment is not in a state for this (already set up, nothing pending, no factor)',
  SECOND_FACTOR_REQUIRED_BY_POLICY: 'the last second factor cannot be removed while the merchant requires one',
  INVALID_SETTLEMENT_ADDRESS: 'not a valid address of the network; the message says why: checksum, length, curve, zero address',
  SETTLEMENT_ADDRESS_REFUSED: 'an address of the gateway itself: a deposit address, a token contract or mint, a gas tank',
  NOT_A_MEMBER: '`switchMerchant` to a merchant the user does not belong to',
  NO_MEMBERSHIP: 'the password is right but the user belongs to no merchant any more',
  LAST_OWNER: 'the only owner cannot be removed or demoted; make another owner first',
  INVALID_INVITE: 'no invite has this token',
  MAIL_FAILED: 'the SMTP server refused or did not answer; the invite was not created',
  MAIL_UNAVAILABLE: 'production without `SMTP_HOST`: invites cannot be mailed',
  WRONG_ENVIRONMENT: 'a sandbox key on `/mainnet/` or the reverse',
  SCOPE_DENIED: 'a checkout key outside its own order',
  METHOD_NOT_ALLOWED: 'with an `Allow` header',
  QUOTE_NOT_LOCKED: 'no locked quote for this order and token yet',
  NO_NETWORK_WATCHED: 'an order, or a payment link opened, in an environment where no network is watched: it could never be paid',
  PAYLOAD_TOO_LARGE: 'body over `BODY_LIMIT_BYTES`',
  UNSUPPORTED_MEDIA_TYPE: 'only `application/json`',
  TOKEN_NOT_SUPPORTED: 'unknown or inactive token for the network and environment',
  RATE_LIMITED: 'with a `Retry-After` header in seconds, and `data.retryAfterS`',
  INTERNAL: '"Internal server error", logged with the request id',
};

/** HTTP status → the codes it carries, from `ErrorCodes` in src/common/errors.ts. */
export function errorTable(): string {
  const byStatus = new Map<number, string[]>();
  for (const [code, status] of Object.entries(ErrorCodes) as [ErrorCode, number][]) {
    const note = ERROR_NOTES[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), note ? `\`${code}\` (${note})` : `\`${code}\``]);
  }
  const rows = [...byStatus.entries()].sort(([a], [b]) => a - b).map(([status, codes]) => `| ${status} | ${codes.join(', ')} |`);
  return ['| HTTP | Codes |', '|---|---|', ...rows].join('\n');
}

export const GENERATED_SECTIONS: readonly GeneratedSection[] = [
  { file: 'docs/configuration.md', marker: 'config-table', render: configMarkdownTable },
  { file: 'docs/api.md', marker: 'error-table', render: errorTable },
  { file: 'docs/order-lifecycle.md', marker: 'order-transitions', render: () => transitionTable(ORDER_TRANSITIONS) },
  { file: 'docs/order-lifecycle.md', marker: 'webhook-delivery-transitions', render: () => transitionTable(WEBHOOK_DELIVERY_TRANSITIONS) },
  { file: 'docs/sweeps.md', marker: 'sweep-transitions', render: () => transitionTable(SWEEP_TRANSITIONS) },
  { file: 'docs/refunds.md', marker: 'refund-transitions', render: () => transitionTable(REFUND_TRANSITIONS) },
  { file: 'docs/teams.md', marker: 'permission-table', render: permissionTableMarkdown },
];

const sectionPattern = (marker: string) => new RegExp(`<!-- ${marker}:start -->\\n([\\s\\S]*?)\\n?<!-- ${marker}:end -->`);

/** The text between a marker pair, or undefined when the file has no such pair. */
export function readSection(text: string, marker: string): string | undefined {
  return text.match(sectionPattern(marker))?.[1];
}

/** `text` with the body between the marker pair replaced; throws when the markers are missing. */
export function replaceSection(text: string, marker: string, body: string): string {
  if (readSection(text, marker) === undefined) throw new Error(`no <!-- ${marker}:start/end --> pair`);
  // A function, so `$` in the body is not read as a replacement pattern.
  return text.replace(sectionPattern(marker), () => `<!-- ${marker}:start -->\n${body}\n<!-- ${marker}:end -->`);
}

/** Rewrites every generated section under `root`; returns the files that changed. */
export function writeGeneratedDocs(root: string): string[] {
  const changed = new Set<string>();
  for (const s of GENERATED_SECTIONS) {
    const path = join(root, s.file);
    const text = readFileSync(path, 'utf8');
    let next: string;
    try {
      next = replaceSection(text, s.marker, s.render());
    } catch (e) {
      throw new Error(`${s.file}: ${(e as Error).message}`);
    }
    if (next !== text) {
      writeFileSync(path, next);
      changed.add(s.file);
    }
  }
  return [...changed];
}
