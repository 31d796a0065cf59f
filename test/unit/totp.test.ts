import { generate } from 'otplib';
import { generateRecoveryCodes, newTotpSecret, normaliseRecoveryCode, totpUri, verifyTotp } from '../../src/modules/merchants/totp';

// A fixed instant in the middle of a 30-second step, so ±1 step is unambiguous.
const NOW_S = 1_790_000_015;
const STEP = Math.floor(NOW_S / 30);
const at = (secret: string, step: number) => generate({ secret, epoch: step * 30 + 1 });

describe('TOTP', () => {
  const secret = newTotpSecret();

  it('a 160-bit base32 secret and an otpauth URI apps read', () => {
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    const u = new URL(totpUri({ secret, account: 'owner@merchant.test', issuer: 'Crypto Payment Gateway' }));
    expect(u.protocol).toBe('otpauth:');
    expect(u.searchParams.get('secret')).toBe(secret);
    expect(u.searchParams.get('issuer')).toBe('Crypto Payment Gateway');
  });

  it('accepts the current step and one either side, and says which step it was', async () => {
    expect(await verifyTotp(secret, await at(secret, STEP), null, NOW_S * 1000)).toBe(STEP);
    expect(await verifyTotp(secret, await at(secret, STEP - 1), null, NOW_S * 1000)).toBe(STEP - 1);
    expect(await verifyTotp(secret, await at(secret, STEP + 1), null, NOW_S * 1000)).toBe(STEP + 1);
    expect(await verifyTotp(secret, await at(secret, STEP + 3), null, NOW_S * 1000)).toBeNull();
  });

  it('refuses a step at or below the last one spent (a code works once)', async () => {
    const code = await at(secret, STEP);
    expect(await verifyTotp(secret, code, STEP, NOW_S * 1000)).toBeNull();
    expect(await verifyTotp(secret, code, STEP - 1, NOW_S * 1000)).toBe(STEP);
    expect(await verifyTotp(secret, await at(secret, STEP - 1), STEP - 1, NOW_S * 1000)).toBeNull();
  });

  it('anything but six digits is wrong without computing', async () => {
    for (const bad of ['', '12345', '1234567', 'abcdef', '12 34 5']) expect(await verifyTotp(secret, bad, null, NOW_S * 1000)).toBeNull();
    const spaced = (await at(secret, STEP)).replace(/^(\d{3})/, '$1 ');
    expect(await verifyTotp(secret, spaced, null, NOW_S * 1000)).toBe(STEP);
  });
});

describe('recovery codes', () => {
  it('ten distinct xxxx-xxxx-xxxx-xxxx codes from a 32-letter alphabet without look-alikes', () => {
    const codes = generateRecoveryCodes();
    expect(codes).toHaveLength(10);
    expect(new Set(codes).size).toBe(10);
    for (const c of codes) expect(c).toMatch(/^[a-hj-km-np-z02-9]{4}(-[a-hj-km-np-z02-9]{4}){3}$/);
  });

  it('normalises what a person types; refuses what cannot be one', () => {
    expect(normaliseRecoveryCode(' ABCD-efgh jkmn-PQRS ')).toBe('abcdefghjkmnpqrs');
    expect(normaliseRecoveryCode('abcd-efgh')).toBeNull();
    expect(normaliseRecoveryCode('abcd-efgh-jkmn-pqr!')).toBeNull();
  });
});
