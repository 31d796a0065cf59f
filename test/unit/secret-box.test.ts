import { createCipheriv, randomBytes } from 'node:crypto';
import { SecretBox } from '../../src/common/crypto';

const k1 = randomBytes(32);
const k2 = randomBytes(32);

/** A value in the first format (`v1.<iv>.<tag>.<ct>`, no key id), as databases written before key ids hold it. */
function sealV1(key: Buffer, plaintext: string, aad: string): string {
  const iv = randomBytes(12);
  const c = createCipheriv('aes-256-gcm', key, iv);
  c.setAAD(Buffer.from(aad));
  const ct = Buffer.concat([c.update(plaintext), c.final()]);
  return ['v1', iv.toString('base64url'), c.getAuthTag().toString('base64url'), ct.toString('base64url')].join('.');
}

describe('SecretBox key ring (MASTER_KEY rotation)', () => {
  it('seals under the current key with its id, and opens what any key of the ring sealed', () => {
    const old = new SecretBox(k1);
    const sealedOld = old.seal('mnemonic words', 'wallet:1');
    expect(sealedOld.startsWith(`v2.${old.currentKid}.`)).toBe(true);

    const rotating = new SecretBox(k2, [k1]);
    expect(rotating.currentKid).not.toBe(old.currentKid);
    expect(rotating.open(sealedOld, 'wallet:1').toString()).toBe('mnemonic words');
    const sealedNew = rotating.seal('mnemonic words', 'wallet:1');
    expect(rotating.isCurrent(sealedNew)).toBe(true);
    expect(rotating.isCurrent(sealedOld)).toBe(false);
    expect(new SecretBox(k2).open(sealedNew, 'wallet:1').toString()).toBe('mnemonic words');
  });

  it('opens the first format (no key id) with whichever key of the ring sealed it', () => {
    const v1 = sealV1(k1, 'api key', 'api-key:7');
    expect(new SecretBox(k2, [k1]).open(v1, 'api-key:7').toString()).toBe('api key');
    expect(() => new SecretBox(k2).open(v1, 'api-key:7')).toThrow(/opens with no key/);
  });

  it('refuses by name what no key of the ring sealed, another row’s blob, and a tampered one', () => {
    const sealed = new SecretBox(k1).seal('x', 'api-key:1');
    expect(() => new SecretBox(k2).open(sealed, 'api-key:1')).toThrow(/neither MASTER_KEY nor in MASTER_KEY_PREVIOUS/);
    expect(() => new SecretBox(k1).open(sealed, 'api-key:2')).toThrow();
    const parts = sealed.split('.');
    parts[4] = Buffer.from('y').toString('base64url');
    expect(() => new SecretBox(k1).open(parts.join('.'), 'api-key:1')).toThrow();
    expect(() => new SecretBox(k1).open('v9.a.b', 'api-key:1')).toThrow(/unrecognised/);
  });

  it('refuses keys that are not 32 bytes', () => {
    expect(() => new SecretBox(k1, [randomBytes(16)])).toThrow(/32 bytes/);
  });
});
