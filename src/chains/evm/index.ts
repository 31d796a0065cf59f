export { evmDriver, EVM_NETWORKS, isEvmNetwork, TRUST_WALLET_COIN, type EvmNetwork } from './evm.driver.js';
export { createEvmAdapter, decodeTransferLog, TRANSFER_TOPIC, type EvmAdapter, type EvmAdapterOptions } from './evm.adapter.js';
export { EvmRpcClient, EvmRpcError, EvmRpcUnavailableError, type EvmRpcOptions, type RpcAttemptFailure } from './evm.rpc.js';
export { createEvmSweeps, DISPERSE_ABI, SWEEPER_ABI, ERC20_TRANSFER, type EvmFees, type EvmSweepCapability, type EvmSweepSettings } from './evm.sweeps.js';
export { deployEvmContract, evmAddressOfKey, sweepContractCreationCode, type DeployedContract } from './evm.deploy.js';
