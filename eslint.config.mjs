import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', '.build/', 'test-artifacts/', 'node_modules/', 'test/generated/', 'src/dashboard/app/generated/', '.data/', 'coverage/', 'jest.config.js'] },
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
    ignores: [
      'src/modules/**/*.resolver.ts',
      'src/modules/**/*.types.ts',
      'src/modules/**/*.inputs.ts',
      'src/modules/**/*.args.ts',
      // Known violation (imports App): the watcher factory is moving to src/jobs (issue 8, part 4).
      'src/modules/payments/chain-watcher.ts',
    ],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(\\.\\./)+(app|rest|http|graphql)(\\.js|/.*)?$',
              message: 'Modules must not depend on transport (app, rest, http, graphql): pass what they need in.',
            },
          ],
        },
      ],
    },
  },
);
