import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import prettier from 'eslint-config-prettier';

// The chains' client libraries (and the local chains' tooling) belong to src/chains/<family>/ and
// src/devchain/; everything else asks the chain registry and the adapters' capabilities.
const CHAIN_LIBRARIES = ['ethers', 'tronweb', '@solana/web3.js', '@solana/spl-token', 'litesvm', 'solc', '@foundry-rs/anvil'];
const chainLibraries = {
  regex: `^(${CHAIN_LIBRARIES.map((l) => l.replaceAll('.', '\\.')).join('|')})(/.*)?$`,
  message: 'Chain client libraries live in src/chains/<family>/ (or src/devchain/): add a capability there and call it.',
};
// The local dev chains are wired in by the composition root only (src/runtime.ts, src/app.ts, src/cli/),
// which hands production code what it needs from them (dev keys, local contract addresses).
const devchain = {
  regex: '^(\\.{1,2}/)+devchain(/.*)?$',
  message: 'Only the composition root (src/runtime.ts, src/app.ts, src/cli/) imports src/devchain/: take what you need as a parameter.',
};
const dynamicImports = (patterns) => [
  'error',
  // esquery ends a regex at any '/': spell it \x2f
  ...patterns.map((p) => ({ selector: `ImportExpression[source.value=/${p.regex.replaceAll('/', '\\x2f')}/]`, message: p.message })),
];
const COMPOSITION_ROOT = ['src/runtime.ts', 'src/app.ts', 'src/cli/**'];

export default tseslint.config(
  {
    ignores: [
      'dist/',
      '.build/',
      'test-artifacts/',
      'node_modules/',
      'test/generated/',
      'src/dashboard/app/generated/',
      '.data/',
      'coverage/',
      'jest.config.js',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'warn',
      'no-console': ['error', { allow: ['error', 'warn'] }],
    },
  },
  { files: ['src/cli/**', 'bench/**', 'test/**', '.ci/**'], rules: { 'no-console': 'off' } },
  {
    // Configuration is read and validated once, at boot, by src/config; everything else receives it.
    files: ['src/**', 'migrations/**'],
    ignores: ['src/config/**'],
    rules: {
      'no-restricted-properties': [
        'error',
        { object: 'process', property: 'env', message: 'Read configuration through src/config (loadConfig), not process.env.' },
      ],
    },
  },
  {
    // Modules hold the core; transports call into them, never the other way. A module's GraphQL
    // adapters (*.resolver.ts, *.types.ts, *.inputs.ts, *.args.ts) are transport and may import it.
    files: ['src/modules/**'],
    ignores: ['src/modules/**/*.resolver.ts', 'src/modules/**/*.types.ts', 'src/modules/**/*.inputs.ts', 'src/modules/**/*.args.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(\\.\\./)+(app|rest|http|graphql)(\\.js|/.*)?$',
              message: 'Modules must not depend on transport (app, rest, http, graphql): pass what they need in.',
            },
            chainLibraries,
            devchain,
          ],
        },
      ],
    },
  },
  {
    files: ['src/**'],
    ignores: ['src/chains/**', 'src/devchain/**', 'src/modules/**', ...COMPOSITION_ROOT],
    rules: { 'no-restricted-imports': ['error', { patterns: [chainLibraries, devchain] }] },
  },
  { files: ['src/chains/**'], rules: { 'no-restricted-imports': ['error', { patterns: [devchain] }] } },
  { files: COMPOSITION_ROOT, rules: { 'no-restricted-imports': ['error', { patterns: [chainLibraries] }] } },
  {
    files: ['src/modules/**/*.resolver.ts', 'src/modules/**/*.types.ts', 'src/modules/**/*.inputs.ts', 'src/modules/**/*.args.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [chainLibraries, devchain] }] },
  },
  // import() too: the runtime and the CLI load heavy modules lazily
  {
    files: ['src/**'],
    ignores: ['src/chains/**', 'src/devchain/**', ...COMPOSITION_ROOT],
    rules: { 'no-restricted-syntax': dynamicImports([chainLibraries, devchain]) },
  },
  { files: ['src/chains/**'], rules: { 'no-restricted-syntax': dynamicImports([devchain]) } },
  { files: COMPOSITION_ROOT, rules: { 'no-restricted-syntax': dynamicImports([chainLibraries]) } },
  // Last: turns off the style rules prettier owns (one formatter, `npm run format`).
  prettier,
);
