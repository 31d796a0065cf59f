/**
 * The test files' environment: jest's Node environment, which also disables every
 * `AsyncLocalStorage` a test file's modules created once the file is done (after its last hook).
 *
 * A jest worker runs many test files in one process, each with its own module registry, but core
 * modules are shared: `node:async_hooks` keeps every enabled storage in one process-wide list, and
 * each new promise or async resource is handed to every storage on that list. A file's storages
 * (MikroORM's request and transaction contexts, the gateway's own) stayed enabled after the file
 * ended, so the list grew with every file the worker ran. Measured in a CI run: 171 enabled storages
 * in a worker after about 100 files, a quarter of its CPU in `AsyncLocalStorage._propagate`, and the
 * provider drills, which run late, 3–7× slower than alone.
 *
 * Storages are recorded as they are constructed through the module's exported class (how libraries
 * create them), so Node's internal ones are never touched. The class is wrapped once per worker; each
 * file records into its own list.
 */
import asyncHooks from 'node:async_hooks';
import { TestEnvironment } from 'jest-environment-node';

type Storage = InstanceType<typeof asyncHooks.AsyncLocalStorage>;
const RECORDER = Symbol.for('cpg.test.asyncStorages');
const hooks = asyncHooks as unknown as { AsyncLocalStorage: typeof asyncHooks.AsyncLocalStorage; [RECORDER]?: { into: Storage[] } };

function recorder(): { into: Storage[] } {
  const existing = hooks[RECORDER];
  if (existing) return existing;
  const state = { into: [] as Storage[] };
  const Original = hooks.AsyncLocalStorage;
  class RecordedAsyncLocalStorage<T> extends Original<T> {
    constructor() {
      super();
      state.into.push(this as Storage);
    }
  }
  hooks.AsyncLocalStorage = RecordedAsyncLocalStorage as typeof asyncHooks.AsyncLocalStorage;
  hooks[RECORDER] = state;
  return state;
}

export default class GatewayTestEnvironment extends TestEnvironment {
  private readonly storages: Storage[] = [];
  /** Where storages were recorded before this environment (an environment set up inside a test: its own). */
  private previous: Storage[] | null = null;

  override async setup(): Promise<void> {
    await super.setup();
    const rec = recorder();
    this.previous = rec.into;
    rec.into = this.storages;
  }

  override async teardown(): Promise<void> {
    for (const storage of this.storages.splice(0)) storage.disable();
    if (this.previous) recorder().into = this.previous;
    await super.teardown();
  }
}
