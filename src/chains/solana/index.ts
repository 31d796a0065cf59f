export { solanaDriver, associatedTokenAddress } from './solana.driver.js';
export { createSolanaAdapter, type SolanaAdapter, type SolanaAdapterOptions } from './solana.adapter.js';
export { SolanaRpcError, isSolanaRpcError } from './solana.errors.js';
export { createSolanaSweeps, solanaKeypair } from './solana.sweeps.js';
