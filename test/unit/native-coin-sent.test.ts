/**
 * `SweepCapability.coinSent` (the reconciliation's top-ups): the native coin a stored funding
 * transaction sends, to whom, decoded offline from its raw form — a plain send, or each recipient of
 * a Disperse call.
 */
import { getAddress, Wallet } from 'ethers';
import { createEvmSweeps, DISPERSE_ABI } from '../../src/chains/evm/evm.sweeps';
import { EvmRpcClient } from '../../src/chains/evm/evm.rpc';

const DISPERSE = '0x00000000000000000000000000000000000d15e5';
const rpc = new EvmRpcClient({ urls: ['http://127.0.0.1:1'], timeoutMs: 1000 });
const sweeps = createEvmSweeps(rpc, { chainId: 31337, disperseAddress: DISPERSE });
const tank = new Wallet('0x' + '11'.repeat(32));
const a = getAddress('0x' + 'aa'.repeat(20));
const b = getAddress('0x' + 'bb'.repeat(20));

describe('coinSent (EVM)', () => {
  it('a plain send: its value to its recipient', async () => {
    const raw = await tank.signTransaction({
      to: a,
      value: 5000n,
      chainId: 31337,
      nonce: 0,
      gasLimit: 21000n,
      maxFeePerGas: 1n,
      maxPriorityFeePerGas: 1n,
      type: 2,
    });
    expect(sweeps.coinSent!({ raw })).toEqual([{ to: a, amount: 5000n }]);
  });

  it('a Disperse call: each recipient with its own amount', async () => {
    const data = DISPERSE_ABI.encodeFunctionData('disperse', [
      [a, b],
      [7n, 11n],
    ]);
    const raw = await tank.signTransaction({
      to: DISPERSE,
      value: 18n,
      data,
      chainId: 31337,
      nonce: 1,
      gasLimit: 100000n,
      maxFeePerGas: 1n,
      maxPriorityFeePerGas: 1n,
      type: 2,
    });
    expect(sweeps.coinSent!({ raw })).toEqual([
      { to: a, amount: 7n },
      { to: b, amount: 11n },
    ]);
  });

  it('a transaction carrying no coin sends nothing', async () => {
    const raw = await tank.signTransaction({
      to: a,
      value: 0n,
      data: '0x1234',
      chainId: 31337,
      nonce: 2,
      gasLimit: 50000n,
      maxFeePerGas: 1n,
      maxPriorityFeePerGas: 1n,
      type: 2,
    });
    expect(sweeps.coinSent!({ raw })).toEqual([]);
  });
});
