import { PublicKey } from '@solana/web3.js';
import { encodeBase58 } from 'ethers';
import { base58ToBytes } from '../../src/chains/solana/solana.transfers.js';

/*
 * Base58 of Solana instruction data and signatures comes from ethers (encodeBase58 / decodeBase58);
 * base58ToBytes restores the leading zero bytes a decoded number cannot carry. Checked against
 * web3.js's own encoder (PublicKey.toBase58) on keys with and without leading zeros.
 */
describe('base58ToBytes', () => {
  const key = (lead: number) => Uint8Array.from({ length: 32 }, (_, i) => (i < lead ? 0 : (i * 37 + 11) % 256));

  it.each([0, 1, 2, 5])('round-trips a 32-byte key with %p leading zero bytes as web3.js encodes it', (lead) => {
    const bytes = key(lead);
    const text = new PublicKey(bytes).toBase58();
    expect(encodeBase58(bytes)).toBe(text);
    expect(base58ToBytes(text)).toEqual(bytes);
  });

  it('keeps a leading tag 0 of instruction data (it would otherwise shift into another layout)', () => {
    const data = Uint8Array.from([0, 3, 1, 0, 0, 0, 0, 0, 0, 0]);
    expect(base58ToBytes(encodeBase58(data))).toEqual(data);
  });

  it('decodes the empty string and all-zero data', () => {
    expect(base58ToBytes('')).toEqual(new Uint8Array(0));
    expect(base58ToBytes('111')).toEqual(new Uint8Array(3));
  });

  it('refuses characters outside the alphabet', () => {
    expect(() => base58ToBytes('0OIl')).toThrow();
  });
});
