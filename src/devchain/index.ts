export * from './devchain.js';
export { startAnvil, anvilBinaryPath, type AnvilInstance, type AnvilOptions } from './anvil.js';
export { compileContract, compileTestToken, type CompiledContract, type CompileResult } from './solc.js';
export * from './sandbox.chains.js';
export * from './sandbox.mint.js';
export * from './dev-wallet.js';
