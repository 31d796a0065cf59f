import { mnemonicToSeedSync } from '@scure/bip39';
import { computeAddress, hexlify } from 'ethers';
import { evmDriver } from '../../src/chains/evm/evm.driver.js';
import { SigningKeyCache } from '../../src/modules/deposits/hd-wallet.service.js';

// The batch deriver (parent node once, one HMAC per key) must give exactly the keys of the full path.
describe('EVM privateKeyDeriver', () => {
  const seed = mnemonicToSeedSync('test test test test test test test test test test test junk');

  it('derives the same key and address as derivePrivateKey for every index', () => {
    const derive = evmDriver.privateKeyDeriver!(seed);
    for (const index of [0, 1, 2, 7, 19, 1000, 65_535, 2 ** 31 - 1]) {
      const key = derive(index);
      expect(hexlify(key)).toBe(hexlify(evmDriver.derivePrivateKey(seed, index)));
      expect(computeAddress(hexlify(key))).toBe(evmDriver.deriveAddress(seed, index));
    }
    // the well-known first account of this mnemonic
    expect(computeAddress(hexlify(derive(0)))).toBe('0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266');
  });

  it('rejects indexes outside the non-hardened range and seeds of the wrong size', () => {
    const derive = evmDriver.privateKeyDeriver!(seed);
    expect(() => derive(-1)).toThrow(RangeError);
    expect(() => derive(2 ** 31)).toThrow(RangeError);
    expect(() => derive(1.5)).toThrow(RangeError);
    expect(() => evmDriver.privateKeyDeriver!(seed.subarray(0, 32))).toThrow(RangeError);
  });

  it('SigningKeyCache.wipe zeroes the cached seeds and drops the derivers', () => {
    const cache = new SigningKeyCache();
    const copy = Uint8Array.from(seed);
    cache.seeds.set('w', copy);
    cache.derivers.set('w/evm', evmDriver.privateKeyDeriver!(copy));
    cache.wipe();
    expect(copy.every((b) => b === 0)).toBe(true);
    expect(cache.seeds.size + cache.derivers.size).toBe(0);
  });
});
