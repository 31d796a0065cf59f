import { randomBytes } from 'node:crypto';
import { fromHex, isAddressValid, toHex } from 'tronweb/utils';
import { isTronAddress, toTronBase58, tronAddressBody, tronAddressFromBody } from '../../src/chains/tron/tron.address';

// tron.address.ts does base58check itself (over ethers) so that an API process need not load TronWeb;
// TronWeb's own utils are the reference it must agree with.
describe('TRON addresses without TronWeb', () => {
  const bodies = [...Array.from({ length: 200 }, () => randomBytes(20).toString('hex')), '00'.repeat(20), 'ff'.repeat(20)];

  test('encoding and decoding agree with tronweb/utils', () => {
    for (const body of bodies) {
      const b58 = fromHex(`41${body}`);
      expect(tronAddressFromBody(body)).toBe(b58);
      expect(tronAddressFromBody(`0x${'00'.repeat(12)}${body}`)).toBe(b58);
      expect(toTronBase58(`41${body.toUpperCase()}`)).toBe(b58);
      expect(toTronBase58(b58)).toBe(b58);
      expect(tronAddressBody(b58)).toBe(toHex(b58).slice(2).toLowerCase());
      expect(tronAddressBody(`41${body}`)).toBe(body);
      expect(isTronAddress(b58)).toBe(true);
    }
  });

  test('invalid addresses are refused as TronWeb refuses them', () => {
    const valid = fromHex(`41${bodies[0]}`);
    const flipped = valid.slice(0, 10) + (valid[10] === 'A' ? 'B' : 'A') + valid.slice(11);
    const otherPrefix = fromHex(`42${bodies[1]}`); // base58check with a prefix other than 0x41
    const cases = [
      flipped,
      otherPrefix,
      valid.slice(0, 33),
      `${valid}1`,
      valid.replace(/^T/, 't'),
      '',
      'T',
      '0x' + bodies[0],
      bodies[0],
      'T0OIl' + valid.slice(5),
    ];
    for (const c of cases) {
      // TronWeb throws on characters outside base58 (0, O, I, l); the gateway answers false instead.
      const reference = (() => {
        try {
          return isAddressValid(c);
        } catch {
          return false;
        }
      })();
      expect(isTronAddress(c)).toBe(reference);
      expect(isTronAddress(c)).toBe(false);
      expect(toTronBase58(c)).toBeNull();
      expect(() => tronAddressBody(c)).toThrow('not a TRON address');
    }
  });
});
