import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '../../src/config/config';
import { keyEncryptionKeys, LocalKeyEncryptionKey, readKeyFile } from '../../src/common/key-encryption';

const dir = mkdtempSync(join(tmpdir(), 'cpg-kek-'));
const keyFile = (name: string, text: string, mode: number) => {
  const file = join(dir, name);
  writeFileSync(file, text);
  chmodSync(file, mode);
  return file;
};

describe('MASTER_KEY_FILE', () => {
  const key = randomBytes(32);

  it('reads 64 hex characters or base64, with a trailing newline, from a file only its owner may read', () => {
    expect(readKeyFile(keyFile('hex', `${key.toString('hex')}\n`, 0o600)).legacyKey).toEqual(key);
    expect(readKeyFile(keyFile('b64', key.toString('base64'), 0o400)).id).toBe(new LocalKeyEncryptionKey(key).id);
  });

  it.each([0o644, 0o640, 0o604, 0o660, 0o606])('refuses mode %o, naming the variable', (mode) => {
    const file = keyFile(`open-${mode}`, key.toString('hex'), mode);
    expect(() => readKeyFile(file)).toThrow(ConfigError);
    expect(() => readKeyFile(file)).toThrow(/MASTER_KEY_FILE: .* group and others must have no access/);
  });

  it('refuses a missing file, a folder, and a key of the wrong length', () => {
    expect(() => readKeyFile(join(dir, 'nope'))).toThrow(/MASTER_KEY_FILE: cannot read .*ENOENT/);
    const sub = join(dir, 'folder');
    mkdirSync(sub, { mode: 0o700 });
    expect(() => readKeyFile(sub)).toThrow(/not a regular file/);
    expect(() => readKeyFile(keyFile('short', 'ab'.repeat(31), 0o600))).toThrow(/32 bytes/);
  });

  it('is the current KEK when set; MASTER_KEY_PREVIOUS only unwraps', () => {
    const old = randomBytes(32);
    const keks = keyEncryptionKeys({ MASTER_KEY: undefined, MASTER_KEY_FILE: keyFile('cur', key.toString('hex'), 0o600), MASTER_KEY_PREVIOUS: [old] });
    expect(keks.current.id).toBe(new LocalKeyEncryptionKey(key).id);
    expect(keks.previous.map((k) => k.id)).toEqual([new LocalKeyEncryptionKey(old).id]);
  });
});

describe('LocalKeyEncryptionKey', () => {
  it('unwraps what it wrapped only with the same context and the same key', async () => {
    const kek = new LocalKeyEncryptionKey(randomBytes(32));
    const dek = randomBytes(32);
    const wrapped = await kek.wrap(dek, 'data-key:1');
    expect(wrapped).not.toContain(dek.toString('hex'));
    expect(await kek.unwrap(wrapped, 'data-key:1')).toEqual(dek);
    await expect(kek.unwrap(wrapped, 'data-key:2')).rejects.toThrow();
    await expect(new LocalKeyEncryptionKey(randomBytes(32)).unwrap(wrapped, 'data-key:1')).rejects.toThrow(/neither MASTER_KEY/);
  });
});
