import { AbiCoder, getAddress, getCreateAddress, hexlify, Wallet } from 'ethers';
import { createEvmSweeps } from './evm.sweeps.js';
import { hexToBigInt, type EvmRpcClient } from './evm.rpc.js';

export interface DeployedContract {
  address: string;
  txHash: string;
  blockNumber: bigint;
  gasUsed: bigint;
}

/**
 * Deploys `creationCode` (bytecode + encoded constructor arguments) from `key` at the chain's current
 * fees (the sweeps' fee detection: EIP-1559 or legacy), and waits for the receipt. For the operator
 * CLI (`gas-tank deploy-disperse`, `gas-tank deploy-sweeper`); a revert or a timeout throws.
 */
export async function deployEvmContract(
  rpc: EvmRpcClient,
  key: Uint8Array,
  creationCode: string,
  opts: { timeoutMs?: number } = {},
): Promise<DeployedContract> {
  const wallet = new Wallet(hexlify(key));
  const sweeps = createEvmSweeps(rpc, {});
  const [chainId, nonce, fees, gas] = await Promise.all([
    rpc.call<string>('eth_chainId', []).then((v) => hexToBigInt(v, 'eth_chainId')),
    rpc.call<string>('eth_getTransactionCount', [wallet.address, 'pending']).then((v) => hexToBigInt(v, 'nonce')),
    sweeps.fees(),
    rpc.call<string>('eth_estimateGas', [{ from: wallet.address, data: creationCode }, 'latest']).then((v) => hexToBigInt(v, 'eth_estimateGas')),
  ]);
  const feeFields =
    fees.kind === 'legacy'
      ? { type: 0, gasPrice: fees.gasPrice }
      : { type: 2, maxFeePerGas: fees.maxFeePerGas, maxPriorityFeePerGas: fees.maxPriorityFeePerGas };
  const raw = await wallet.signTransaction({ ...feeFields, chainId, nonce: Number(nonce), gasLimit: (gas * 12n) / 10n, data: creationCode, value: 0n });
  const txHash = await rpc.call<string>('eth_sendRawTransaction', [raw]);
  const deadline = Date.now() + (opts.timeoutMs ?? 300_000);
  for (;;) {
    const r = await rpc.call<{ status: string; contractAddress: string | null; blockNumber: string; gasUsed: string } | null>('eth_getTransactionReceipt', [
      txHash,
    ]);
    if (r) {
      if (r.status !== '0x1' || !r.contractAddress) throw new Error(`deployment ${txHash} reverted`);
      const address = getAddress(r.contractAddress);
      if (address !== getCreateAddress({ from: wallet.address, nonce })) throw new Error(`deployment ${txHash} created ${address}, not the expected address`);
      return { address, txHash, blockNumber: hexToBigInt(r.blockNumber, 'blockNumber'), gasUsed: hexToBigInt(r.gasUsed, 'gasUsed') };
    }
    if (Date.now() > deadline) throw new Error(`deployment ${txHash} not mined yet: check it later, then set the address in config`);
    await new Promise((res) => setTimeout(res, 2000));
  }
}

/** The address of a secp256k1 key (the deployer, the gas tank). */
export const evmAddressOfKey = (key: Uint8Array): string => new Wallet(hexlify(key)).address;

/** Creation code of a sweep contract: the Sweeper takes the one address it obeys (the gas tank) as its constructor argument. */
export function sweepContractCreationCode(contract: 'disperse' | 'sweeper', bytecode: string, tank: string): string {
  return contract === 'sweeper' ? bytecode + AbiCoder.defaultAbiCoder().encode(['address'], [tank]).slice(2) : bytecode;
}
