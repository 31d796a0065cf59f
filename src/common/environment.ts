/** Sandbox (testnets, faucet) and production (mainnets) share one deployment; every merchant-owned row carries one. */
export const ENVIRONMENTS = ['sandbox', 'production'] as const;
export type Environment = (typeof ENVIRONMENTS)[number];

/** REST path segment of each environment (`/api/v2/testnet/…`, `/api/v2/mainnet/…`). */
export const ENV_PATH: Record<Environment, string> = { sandbox: 'testnet', production: 'mainnet' };

export const NETWORKS = ['ETHEREUM', 'BINANCE', 'TRON', 'SOLANA'] as const;
export type Network = (typeof NETWORKS)[number];

export const WALLET_TYPES = ['METAMASK', 'WALLETCONNECT', 'TRUSTWALLET', 'PHANTOM'] as const;
export type WalletType = (typeof WALLET_TYPES)[number];
