import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generateMnemonic } from '@scure/bip39';
import { wordlist } from '@scure/bip39/wordlists/english.js';
import type { DevSecrets } from './config.js';

/**
 * Development-only secrets, generated once into `<dataDir>/dev-secrets.json` (mode 0600) so data
 * encrypted in one run can be read in the next. Never used when NODE_ENV=production.
 */
export function loadOrCreateDevSecrets(dataDir: string): DevSecrets {
  const file = join(dataDir, 'dev-secrets.json');
  let raw: { MASTER_KEY: string; JWT_SECRET: string; GAS_TANK_MNEMONIC_SANDBOX?: string } | undefined;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8')) as typeof raw;
  } catch {
    raw = undefined;
  }
  if (raw?.MASTER_KEY && raw.JWT_SECRET) {
    // A file from before sweeps: the sandbox gas tank's mnemonic is added to it once.
    if (!raw.GAS_TANK_MNEMONIC_SANDBOX) {
      raw.GAS_TANK_MNEMONIC_SANDBOX = generateMnemonic(wordlist, 128);
      writeFileSync(file, JSON.stringify(raw, null, 2), { mode: 0o600 });
    }
    return { MASTER_KEY: Buffer.from(raw.MASTER_KEY, 'hex'), JWT_SECRET: raw.JWT_SECRET, GAS_TANK_MNEMONIC_SANDBOX: raw.GAS_TANK_MNEMONIC_SANDBOX };
  }
  mkdirSync(dataDir, { recursive: true });
  const secrets = {
    MASTER_KEY: randomBytes(32).toString('hex'),
    JWT_SECRET: randomBytes(48).toString('base64url'),
    GAS_TANK_MNEMONIC_SANDBOX: generateMnemonic(wordlist, 128),
  };
  writeFileSync(file, JSON.stringify(secrets, null, 2), { mode: 0o600 });
  return {
    MASTER_KEY: Buffer.from(secrets.MASTER_KEY, 'hex'),
    JWT_SECRET: secrets.JWT_SECRET,
    GAS_TANK_MNEMONIC_SANDBOX: secrets.GAS_TANK_MNEMONIC_SANDBOX,
    created: true,
  };
}

/**
 * The boot warning when development secrets are in use (null when none are): it says "generated into"
 * only for the start that wrote the file, and "read from" on every later start, so a newcomer is not told
 * twice that new secrets were made (which would suggest their data can no longer be read).
 */
export function devSecretsNotice(config: {
  generatedSecrets: string[];
  devSecretsCreated: boolean;
  DATA_DIR: string;
}): { file: string; message: string } | null {
  if (!config.generatedSecrets.length) return null;
  const how = config.devSecretsCreated ? 'generated into' : 'read from';
  return {
    file: join(config.DATA_DIR, 'dev-secrets.json'),
    message: `!!! DEVELOPMENT SECRETS IN USE: ${how} the data folder. Never run production like this; set MASTER_KEY and JWT_SECRET !!!`,
  };
}
