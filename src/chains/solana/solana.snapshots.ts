import { createHash } from 'node:crypto';
import type { AccountInfo } from '@solana/web3.js';

/**
 * What a deposit owner's token accounts looked like when their history was last listed in full:
 * one fingerprint per mint, `mint=fingerprint` joined by `;` (the `seen` the watcher stores with the
 * cursor). An account that does not exist has the fingerprint `-`.
 *
 * A fingerprint hashes everything an account read returns that a transfer can change: the owning
 * program, lamports and the whole data (amount, state, Token-2022 extensions such as withheld
 * fees). Nobody but the owner's key can move tokens out of a deposit's account, and the gateway
 * holds that key: an account read that matches the last listing therefore proves that nothing
 * arrived, unless one of our own sweeps moved money out meanwhile and a payment
 * brought the balance back to where it was. The watcher asks for a listing in that case (`recheck`).
 */
export type Snapshot = Map<string, string>;

const ABSENT = '-';

export function fingerprint(info: AccountInfo<Buffer> | null): string {
  if (!info) return ABSENT;
  return createHash('sha256').update(info.owner.toBuffer()).update(String(info.lamports)).update('|').update(info.data).digest('base64url').slice(0, 22);
}

export function parseSnapshot(seen: string | null | undefined): Snapshot | null {
  if (!seen) return null;
  const out: Snapshot = new Map();
  for (const part of seen.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0) out.set(part.slice(0, eq), part.slice(eq + 1));
  }
  return out;
}

export function formatSnapshot(snapshot: Snapshot): string {
  return [...snapshot.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([mint, fp]) => `${mint}=${fp}`)
    .join(';');
}

/** True when none of the accounts exists. */
export function allAbsent(snapshot: Snapshot): boolean {
  for (const fp of snapshot.values()) if (fp !== ABSENT) return false;
  return true;
}

/** True when some account of `now` differs from (or is missing in) the stored snapshot. */
export function changedSince(stored: Snapshot | null, now: Snapshot): boolean {
  if (!stored) return true;
  for (const [mint, fp] of now) if (stored.get(mint) !== fp) return true;
  return false;
}
