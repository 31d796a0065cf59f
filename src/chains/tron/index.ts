export { tronDriver } from './tron.driver.js';
export { createTronAdapter, TRANSFER_TOPIC, type TronAdapter, type TronAdapterOptions } from './tron.adapter.js';
export { TronRpcError, isTronRpcError, type TronRpcFailure } from './tron.errors.js';
export { isTronAddress, toTronBase58, tronAddressBody, tronAddressFromBody } from './tron.address.js';
export { createTronSweeps, type TronSweeps, type TronSweepOptions, type TronTransferQuote, type TankStake } from './tron.sweeps.js';
