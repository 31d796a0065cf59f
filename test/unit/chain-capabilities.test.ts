import { isFinal, type ChainNetworkConfig } from '../../src/chains/chain-adapter.js';
import { createEvmAdapter, evmDriver } from '../../src/chains/evm/index.js';
import { explorerTxUrl, networkDisplayName, watchAddressFor } from '../../src/chains/registry.js';
import { associatedTokenAddress, createSolanaAdapter, solanaDriver } from '../../src/chains/solana/index.js';
import { createTronAdapter, tronDriver } from '../../src/chains/tron/index.js';

/*
 * What each chain declares instead of the watcher asking for its family (chain-adapter.ts):
 * observation kind, finality rule, address comparison key and the address watched for a deposit.
 * Adapters are only constructed here (no RPC call is made).
 */
const config = (network: ChainNetworkConfig['network']): ChainNetworkConfig => ({
  network,
  rpcUrls: ['http://127.0.0.1:9'],
  chainId: 1,
  confirmations: 3,
  maxBlockRange: 100,
  timeoutMs: 100,
});

describe('isFinal', () => {
  const head = { latest: 100n, finalized: 90n };
  it.each<[string, bigint, boolean, boolean]>([
    // block, depth rule, depth-and-chain-final rule (3 confirmations: block 98 is the newest deep enough)
    ['newest block', 100n, false, false],
    ['3 deep', 98n, true, false],
    ['2 deep', 99n, false, false],
    ['deep and at the final block', 90n, true, true],
    ['deep, below the final block', 50n, true, true],
    ['deep, one above the final block', 91n, true, false],
  ])('%s (block %p): depth %p, depth-and-chain-final %p', (_, block, depth, chainFinal) => {
    expect(isFinal('depth', block, head, 3)).toBe(depth);
    expect(isFinal('depth-and-chain-final', block, head, 3)).toBe(chainFinal);
  });

  it('0 confirmations counts the head itself; depth-and-chain-final still waits for the final block', () => {
    expect(isFinal('depth', 100n, head, 0)).toBe(true);
    expect(isFinal('depth-and-chain-final', 100n, head, 0)).toBe(false);
  });
});

describe('adapters declare their capabilities', () => {
  it.each([
    ['ETHEREUM', 'log-scan', 'depth', () => createEvmAdapter(config('ETHEREUM'))],
    ['BINANCE', 'log-scan', 'depth', () => createEvmAdapter(config('BINANCE'))],
    ['TRON', 'log-scan', 'depth-and-chain-final', () => createTronAdapter(config('TRON'))],
    ['SOLANA', 'account-poll', 'depth-and-chain-final', () => createSolanaAdapter(config('SOLANA'))],
  ] as const)('%s: %s, %s; sweep capability declared', (_, observation, finality, make) => {
    const adapter = make();
    expect(adapter.observation.kind).toBe(observation);
    expect(adapter.finality).toBe(finality);
    expect(adapter).toHaveProperty('sweeps');
  });
});

describe('drivers: address key and watched address', () => {
  const evm = '0x52908400098527886E0F7030069857D2E4169EE7';
  const tron = 'TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf';
  const owner = '9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM';
  const mint = '4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU';

  it('EVM hex compares case-insensitively; base58 does not', () => {
    expect(evmDriver.addressKey(evm)).toBe(evmDriver.addressKey(evm.toLowerCase()));
    expect(tronDriver.addressKey(tron)).not.toBe(tronDriver.addressKey(tron.toLowerCase()));
    expect(solanaDriver.addressKey(owner)).not.toBe(solanaDriver.addressKey(owner.toLowerCase()));
  });

  it('SOLANA watches the owner’s associated token account; EVM and TRON the deposit address itself', () => {
    expect(watchAddressFor('SOLANA', owner, mint)).toBe(associatedTokenAddress(owner, mint, 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA'));
    expect(watchAddressFor('ETHEREUM', evm, evm)).toBeNull();
    expect(watchAddressFor('TRON', tron, tron)).toBeNull();
  });
});

describe('registry: names and explorer pages', () => {
  it('names each network once, as people know it', () => {
    expect((['ETHEREUM', 'BINANCE', 'TRON', 'SOLANA'] as const).map(networkDisplayName)).toEqual(['Ethereum', 'BNB Smart Chain', 'TRON', 'Solana']);
  });

  it('links the mainnet explorers in production, the testnets in a sandbox without dev chains, nothing on the local chains', () => {
    expect(explorerTxUrl('production', 'ETHEREUM', '0xab', true)).toBe('https://etherscan.io/tx/0xab');
    expect(explorerTxUrl('production', 'TRON', 'cd', false)).toBe('https://tronscan.org/#/transaction/cd');
    expect(explorerTxUrl('sandbox', 'BINANCE', '0xab', false)).toBe('https://testnet.bscscan.com/tx/0xab');
    expect(explorerTxUrl('sandbox', 'SOLANA', 'Sig1', false)).toBe('https://solscan.io/tx/Sig1?cluster=devnet');
    expect(explorerTxUrl('sandbox', 'SOLANA', 'Sig1', true)).toBeNull();
    expect(explorerTxUrl('sandbox', 'ETHEREUM', '0xab', true)).toBeNull();
  });
});
