import { Algorithm, hash, verify } from '@node-rs/argon2';

/** argon2id with the library defaults (m=19 MiB, t=2, p=1: OWASP's minimum recommendation). */
export function hashPassword(password: string): Promise<string> {
  return hash(password, { algorithm: Algorithm.Argon2id });
}

// Verifying against a real hash when the user does not exist keeps login timing the same either way.
const DUMMY_HASH = hash('not-a-real-password', { algorithm: Algorithm.Argon2id });

export async function verifyPassword(passwordHash: string | null, password: string): Promise<boolean> {
  try {
    const ok = await verify(passwordHash ?? (await DUMMY_HASH), password);
    return ok && passwordHash !== null;
  } catch {
    return false;
  }
}
