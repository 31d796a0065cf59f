/**
 * The customer's side of the TRON tests on the java-tron emulator (src/devchain/tron.emulator.ts): a
 * real TronWeb wallet that builds a TRC-20 transfer through the node (triggersmartcontract), signs it
 * locally and broadcasts it, exactly as a wallet app pays a deposit address.
 */
import { getBytes, Mnemonic } from 'ethers';
import { TronWeb } from 'tronweb';
import { tronDriver } from '../../src/chains/tron';
import type { TronEmulator } from '../../src/devchain/tron.emulator';
import { eventually } from './order-watch';

const SEED = getBytes(Mnemonic.fromPhrase('test test test test test test test test test test test junk').computeSeed());

/** The TRON tests' customer: HD index 7 of the test mnemonic, with a TronWeb wallet on `emu`. */
export function tronCustomer(emu: TronEmulator): { address: string; wallet: TronWeb } {
  const address = tronDriver.deriveAddress(SEED, 7);
  const wallet = new TronWeb({ fullHost: emu.url, privateKey: Buffer.from(tronDriver.derivePrivateKey(SEED, 7)).toString('hex') });
  return { address, wallet };
}

/** A TRC-20 transfer of `token` from `from`, signed by `signer`'s key; resolves with its id once it is mined and succeeded. */
export async function tronTransfer(emu: TronEmulator, signer: TronWeb, from: string, token: string, to: string, amount: bigint): Promise<string> {
  const built = await signer.transactionBuilder.triggerSmartContract(
    token,
    'transfer(address,uint256)',
    { feeLimit: 100_000_000 },
    [
      { type: 'address', value: to },
      { type: 'uint256', value: amount.toString() },
    ],
    from,
  );
  const res = await signer.trx.sendRawTransaction(await signer.trx.sign(built.transaction));
  if (!res.result) throw new Error(`broadcast failed: ${JSON.stringify(res)}`);
  // automine: mined as it is broadcast (the receipt may trail the answer a little on a busy machine)
  await eventually(async () => (await emu.getTx(res.txid)) !== null, `transfer ${res.txid} mined`, 5000);
  if (!(await emu.getTx(res.txid))?.success) throw new Error(`transfer ${res.txid} to ${to} did not succeed`);
  return res.txid;
}

/** A TRX transfer (TransferContract) of `sun` from `from`, signed by `signer`'s key; resolves with its id once it is mined and succeeded. */
export async function tronSendTrx(emu: TronEmulator, signer: TronWeb, from: string, to: string, sun: bigint): Promise<string> {
  const head = (await (await fetch(`${emu.url}/wallet/getnowblock`, { method: 'POST', body: '{}' })).json()) as {
    blockID: string;
    block_header: { raw_data: { timestamp: number } };
  };
  const ts = head.block_header.raw_data.timestamp;
  const blockHeader = { ref_block_bytes: head.blockID.slice(12, 16), ref_block_hash: head.blockID.slice(16, 32), expiration: ts + 60_000, timestamp: ts };
  const built = await signer.transactionBuilder.sendTrx(to, Number(sun), from, { blockHeader } as never);
  const res = await signer.trx.sendRawTransaction(await signer.trx.sign(built));
  if (!res.result) throw new Error(`broadcast failed: ${JSON.stringify(res)}`);
  await eventually(async () => (await emu.getTx(res.txid)) !== null, `TRX transfer ${res.txid} mined`, 5000);
  if (!(await emu.getTx(res.txid))?.success) throw new Error(`TRX transfer ${res.txid} to ${to} did not succeed`);
  return res.txid;
}
