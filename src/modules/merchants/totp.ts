import { randomBytes } from 'node:crypto';
import { generateSecret, generateURI, verify } from 'otplib';

/**
 * TOTP as authenticator apps expect it (RFC 6238: SHA-1, 6 digits, 30-second steps), through otplib.
 * A code is accepted for the current step and one step either side (clock drift), and only for a
 * step above the last one spent, so each code works once.
 */

const PERIOD = 30;
/** One step either side of now. */
const TOLERANCE_S = PERIOD;

/** A fresh 160-bit secret, base32 (what the otpauth URI carries). */
export function newTotpSecret(): string {
  return generateSecret({ length: 20 });
}

/** `otpauth://totp/<issuer>:<account>?secret=…&issuer=…`: what the QR code encodes. */
export function totpUri(p: { secret: string; account: string; issuer: string }): string {
  return generateURI({ issuer: p.issuer, label: p.account, secret: p.secret, algorithm: 'sha1', digits: 6, period: PERIOD });
}

/**
 * The time step a code belongs to, or null when it is wrong (or not above `afterStep`). Six digits
 * only: anything else is wrong without computing.
 */
export async function verifyTotp(secret: string, code: string, afterStep: number | null, now = Date.now()): Promise<number | null> {
  const token = code.replace(/\s+/g, '');
  if (!/^\d{6}$/.test(token)) return null;
  const epoch = Math.floor(now / 1000);
  const r = await verify({ secret, token, epoch, epochTolerance: TOLERANCE_S, period: PERIOD, ...(afterStep !== null && { afterTimeStep: afterStep }) });
  return r.valid && 'timeStep' in r ? r.timeStep : null;
}

// Recovery codes: 16 characters from a 32-letter alphabet without look-alikes = 80 random bits, so a
// SHA-256 of the code is as safe to store as an API key's. Shown as xxxx-xxxx-xxxx-xxxx.
const ALPHABET = 'abcdefghjkmnpqrstuvwxyz023456789'.split(''); // 32: no i, l, o, 1
export const RECOVERY_CODE_COUNT = 10;

export function generateRecoveryCodes(n = RECOVERY_CODE_COUNT): string[] {
  return Array.from({ length: n }, () => {
    const chars = [...randomBytes(16)].map((b) => ALPHABET[b & 31]!).join('');
    return chars.match(/.{4}/g)!.join('-');
  });
}

/** Lower-case, without spaces or dashes; null when it cannot be a recovery code. */
export function normaliseRecoveryCode(code: string): string | null {
  const c = code.toLowerCase().replace(/[\s-]+/g, '');
  return /^[a-z0-9]{16}$/.test(c) ? c : null;
}
