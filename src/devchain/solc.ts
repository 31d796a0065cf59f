import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** ABI + creation bytecode of one compiled contract. */
export interface CompiledContract {
  contractName: string;
  abi: readonly Record<string, unknown>[];
  /** 0x-prefixed creation bytecode. */
  bytecode: string;
}

export interface CompileOptions {
  /** Solidity source text. */
  source: string;
  /** Name the source is compiled under (appears in errors). */
  fileName: string;
  contractName: string;
  /** Optional folder for a JSON cache keyed by source hash, so a restart skips loading solc's wasm. */
  cacheDir?: string;
}

export interface CompileResult extends CompiledContract {
  /** Where the result came from, and how long that took: callers log it at startup. */
  source: 'memory' | 'file' | 'solc';
  ms: number;
}

// Pinned so the bytecode (and with it the deterministic token addresses' code) does not drift with
// solc's default EVM version; cancun is supported by every anvil we ship.
const SETTINGS = {
  optimizer: { enabled: true, runs: 200 },
  evmVersion: 'cancun',
  outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } },
} as const;

const memoryCache = new Map<string, CompiledContract>();

function solcVersion(): string {
  // package.json is cheap to read; requiring solc itself loads ~8 MB of wasm
  return (JSON.parse(readFileSync(require.resolve('solc/package.json'), 'utf8')) as { version: string }).version;
}

function cacheKey(opts: CompileOptions): string {
  return createHash('sha256')
    .update(JSON.stringify([solcVersion(), SETTINGS, opts.fileName, opts.contractName, opts.source]))
    .digest('hex');
}

interface SolcOutput {
  errors?: { severity: string; formattedMessage: string }[];
  contracts?: Record<string, Record<string, { abi: Record<string, unknown>[]; evm: { bytecode: { object: string } } }>>;
}

function runSolc(opts: CompileOptions): CompiledContract {
  // loaded lazily (~350 ms of wasm start-up) so a cache hit never pays for it; sync to keep compile sync
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const solc = require('solc') as { compile(input: string): string };
  const input = { language: 'Solidity', sources: { [opts.fileName]: { content: opts.source } }, settings: SETTINGS };
  const out = JSON.parse(solc.compile(JSON.stringify(input))) as SolcOutput;
  const errors = (out.errors ?? []).filter((e) => e.severity === 'error');
  if (errors.length > 0) {
    throw new Error(`solc failed for ${opts.fileName}:\n${errors.map((e) => e.formattedMessage).join('\n')}`);
  }
  const c = out.contracts?.[opts.fileName]?.[opts.contractName];
  if (!c) throw new Error(`solc produced no contract ${opts.contractName} in ${opts.fileName}`);
  return { contractName: opts.contractName, abi: c.abi, bytecode: `0x${c.evm.bytecode.object}` };
}

function readFileCache(file: string, contractName: string): CompiledContract | null {
  if (!existsSync(file)) return null;
  try {
    const parsed = JSON.parse(readFileSync(file, 'utf8')) as CompiledContract;
    if (parsed.contractName === contractName && Array.isArray(parsed.abi) && /^0x[0-9a-f]+$/i.test(parsed.bytecode)) {
      return parsed;
    }
  } catch {
    // a torn or hand-edited cache file is just a miss: recompiling is always correct
  }
  return null;
}

/** Compiles one contract with solc-js (offline), cached in memory and optionally on disk. */
export function compileContract(opts: CompileOptions): CompileResult {
  const started = performance.now();
  const key = cacheKey(opts);
  const hit = memoryCache.get(key);
  if (hit) return { ...hit, source: 'memory', ms: performance.now() - started };

  const file = opts.cacheDir ? path.join(opts.cacheDir, `${opts.contractName}-${key.slice(0, 16)}.json`) : null;
  if (file) {
    const cached = readFileCache(file, opts.contractName);
    if (cached) {
      memoryCache.set(key, cached);
      return { ...cached, source: 'file', ms: performance.now() - started };
    }
  }

  const compiled = runSolc(opts);
  memoryCache.set(key, compiled);
  if (file && opts.cacheDir) {
    mkdirSync(opts.cacheDir, { recursive: true });
    // write-then-rename so a concurrent start (two jest workers) never reads half a file
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify(compiled));
    renameSync(tmp, file);
  }
  return { ...compiled, source: 'solc', ms: performance.now() - started };
}

/**
 * Finds a Solidity source by its path from the package root (`src/...`): looked up from this file's
 * folder upwards, so it works from source (jest, ts-node) and from `dist/` or `.build/` alike (tsc
 * does not copy .sol files).
 */
export function contractSourcePath(fromRoot: string): string {
  const looked: string[] = [];
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, fromRoot);
    looked.push(candidate);
    if (existsSync(candidate)) return candidate;
    if (path.dirname(dir) === dir) break;
  }
  throw new Error(`${fromRoot} not found (looked in ${looked.join(', ')})`);
}

/** Compiles the contract `contractName` of the source file `fromRoot` (path from the package root). */
export function compileContractFile(fromRoot: string, contractName: string, opts: { cacheDir?: string } = {}): CompileResult {
  return compileContract({
    source: readFileSync(contractSourcePath(fromRoot), 'utf8'),
    fileName: path.basename(fromRoot),
    contractName,
    cacheDir: opts.cacheDir,
  });
}

/** The sandbox ERC-20 (name, symbol, decimals in the constructor; open `mint`). */
export function compileTestToken(opts: { cacheDir?: string } = {}): CompileResult {
  return compileContractFile('src/devchain/contracts/TestToken.sol', 'TestToken', opts);
}
