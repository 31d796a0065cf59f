/**
 * The local chains' well-known keys that the gateway's services read at boot (the faucet's defaults,
 * the EVM dev gas tank). Kept apart from the chain starters (`devchain.ts`, `sandbox.chains.ts`): an
 * API process needs these few constants, never anvil, solc, the TRON emulator or the Solana facade.
 * All public knowledge, like anvil's accounts: never use them off local chains.
 */
import { createHash } from 'node:crypto';
import { computeAddress } from 'ethers';

/** A deterministic dev key: public knowledge, like anvil's accounts; never use it off local chains. */
export const devSeed = (label: string): Buffer => createHash('sha256').update(`cpg-sandbox/${label}`).digest();

/** secp256k1 key of the local faucet wallet on ETHEREUM, BINANCE and TRON (the same key serves all three). */
export const SANDBOX_FAUCET_SECP256K1_KEY = `0x${devSeed('faucet/secp256k1').toString('hex')}`;
/** ed25519 seed (32 bytes, hex) of the local faucet wallet on SOLANA. */
export const SANDBOX_FAUCET_SOLANA_SEED = devSeed('faucet/solana').toString('hex');

/**
 * The local gas tank's key on the EVM dev chains. The dev Sweeper obeys it, and every start funds it
 * with native coin.
 */
export const DEV_GAS_TANK_EVM_KEY = `0x${devSeed('gas-tank/secp256k1').toString('hex')}`;
export const DEV_GAS_TANK_EVM_ADDRESS = computeAddress(DEV_GAS_TANK_EVM_KEY);
