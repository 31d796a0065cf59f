/**
 * The test environment (test/support/test-environment.ts) disables the AsyncLocalStorages created
 * while its file ran, and no other: left enabled, every later file in the worker paid for them on
 * each promise.
 */
import asyncHooks from 'node:async_hooks';
import type { Config } from '@jest/types';
import GatewayTestEnvironment from '../support/test-environment';

it('disables the storages created while its file ran, and leaves the ones from before enabled', async () => {
  const before = new asyncHooks.AsyncLocalStorage<string>();
  before.enterWith('outer');
  const env = new GatewayTestEnvironment(
    { globalConfig: {} as Config.GlobalConfig, projectConfig: { testEnvironmentOptions: {} } as unknown as Config.ProjectConfig },
    { console, docblockPragmas: {}, testPath: __filename },
  );
  await env.setup();
  const during = new asyncHooks.AsyncLocalStorage<string>();
  during.enterWith('inner');
  expect([before.getStore(), during.getStore()]).toEqual(['outer', 'inner']);
  await env.teardown();
  expect([before.getStore(), during.getStore()]).toEqual(['outer', undefined]);
  // this file's own recording goes on after the inner environment is gone
  const after = new asyncHooks.AsyncLocalStorage<string>();
  after.enterWith('later');
  expect(after.getStore()).toBe('later');
});
