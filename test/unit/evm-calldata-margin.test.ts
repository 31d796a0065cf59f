import { amountCalldataMargin } from '../../src/chains/evm/evm.sweeps';
import { NATIVE_TOKEN } from '../../src/chains/chain-adapter';

const token = { address: '0x0000000000000000000000000000000000000001', symbol: 'USDT', decimals: 18 };
/** Calldata gas of the amount word of `transfer(to, amount)`: 4 per zero byte, 16 per non-zero byte. */
const wordGas = (amount: bigint) => {
  const hex = amount.toString(16).padStart(64, '0');
  let gas = 0n;
  for (let i = 0; i < 64; i += 2) gas += hex.slice(i, i + 2) === '00' ? 4n : 16n;
  return gas;
};

describe('amountCalldataMargin', () => {
  it('prices a 1-unit quote as if its amount word were all non-zero bytes', () => {
    expect(amountCalldataMargin({ token, amount: 1n })).toBe(31n * 12n);
    expect(amountCalldataMargin({ token, amount: 2n ** 256n - 1n })).toBe(0n);
  });

  it('a quote made with 1 unit plus its margin covers the calldata of any real amount (18-decimal balances included)', () => {
    const quoted = wordGas(1n) + amountCalldataMargin({ token, amount: 1n });
    for (const amount of [1n, 255n, 10n ** 6n, 1234567n * 10n ** 18n, 10n ** 30n, 2n ** 256n - 1n]) expect(wordGas(amount)).toBeLessThanOrEqual(quoted);
  });

  it('adds nothing for native coin (its value is not calldata)', () => {
    expect(amountCalldataMargin({ token: { ...token, address: NATIVE_TOKEN }, amount: 1n })).toBe(0n);
  });
});
