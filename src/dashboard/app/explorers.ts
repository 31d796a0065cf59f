import type { Environment, Network } from './documents';

/** Public block explorers' transaction pages; the sandbox's local chains have none. */
const TX: Record<Network, string> = {
  ETHEREUM: 'https://etherscan.io/tx/',
  BINANCE: 'https://bscscan.com/tx/',
  TRON: 'https://tronscan.org/#/transaction/',
  SOLANA: 'https://solscan.io/tx/',
};

export const txLink = (env: Environment, network: Network, hash: string): string | null => (env === 'PRODUCTION' ? TX[network] + hash : null);
