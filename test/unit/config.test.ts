import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CONFIG_VARS, ConfigError, loadConfig, type ConfigVar } from '../../src/config';
import { devSecretsNotice } from '../../src/config/dev-secrets';
import { v8Flags } from '../../src/config/v8-flags';

const dirs: string[] = [];
const tmp = () => {
  const d = mkdtempSync(join(tmpdir(), 'cpg-config-'));
  dirs.push(d);
  return d;
};
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

const SECRETS = { MASTER_KEY: 'ab'.repeat(32), JWT_SECRET: 'j'.repeat(40) };

/** The ConfigError thrown for `env`, or a test failure if none is thrown. */
function configError(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return e as ConfigError;
  }
  throw new Error(`expected a ConfigError for ${JSON.stringify(env)}`);
}

describe('config validation', () => {
  it.each([
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['PORT', '-1'],
    ['MASTER_KEY', 'too-short'],
    ['MASTER_KEY', 'ab'.repeat(31)],
    ['JWT_SECRET', 'short'],
    ['DATABASE_URL', 'mysql://x@y/z'],
    ['NODE_ENV', 'staging'],
    ['RATE_LIMIT_STORE', 'redis'],
    ['BODY_LIMIT_BYTES', '12'],
    ['TRUST_PROXY', 'maybe'],
  ])('%s=%s → ConfigError naming the variable', (variable, value) => {
    const err = configError({ ...SECRETS, DATA_DIR: tmp(), [variable]: value });
    expect(err.problems.map((p) => p.variable)).toEqual([variable]);
    expect(err.message).toContain(`${variable}:`);
    // The message describes the problem, never echoes a secret's value.
    if ((CONFIG_VARS[variable as ConfigVar] as { secret?: boolean }).secret) expect(err.message).not.toContain(value);
  });

  it('every bad variable is reported at once', () => {
    const err = configError({ PORT: 'abc', MASTER_KEY: 'nope', LOG_LEVEL: 'loud', DATA_DIR: tmp() });
    expect(err.problems.map((p) => p.variable).sort()).toEqual(['LOG_LEVEL', 'MASTER_KEY', 'PORT']);
  });

  it('MASTER_KEY_FILE stands for MASTER_KEY (production accepts it, nothing is generated); both at once are refused', () => {
    const file = { MASTER_KEY_FILE: '/run/secrets/master.key', JWT_SECRET: SECRETS.JWT_SECRET };
    const prod = loadConfig({ NODE_ENV: 'production', ...file, DATABASE_URL: 'postgres://u@h/db' });
    expect(prod).toMatchObject({ MASTER_KEY: undefined, MASTER_KEY_FILE: '/run/secrets/master.key', generatedSecrets: [] });
    expect(loadConfig({ ...file, DATA_DIR: tmp() }).generatedSecrets).toEqual([]);
    expect(configError({ ...SECRETS, MASTER_KEY_FILE: '/run/secrets/master.key', DATA_DIR: tmp() }).message).toMatch(
      /MASTER_KEY_FILE: set MASTER_KEY or MASTER_KEY_FILE, not both/,
    );
  });

  it('production refuses missing secrets and the embedded database, naming each', () => {
    const err = configError({ NODE_ENV: 'production' });
    expect(err.problems.map((p) => p.variable)).toEqual(expect.arrayContaining(['MASTER_KEY', 'JWT_SECRET', 'DATABASE_URL']));
    for (const v of ['MASTER_KEY', 'JWT_SECRET', 'DATABASE_URL']) expect(err.message).toMatch(new RegExp(`${v}: required in production`));
    // Dev chains are refused too, but a complete production config loads.
    expect(configError({ NODE_ENV: 'production', ...SECRETS, DATABASE_URL: 'postgres://u@h/db', DEV_CHAINS: 'true' }).problems.map((p) => p.variable)).toEqual([
      'DEV_CHAINS',
    ]);
    // The test-only crash hooks too; outside production they load.
    expect(
      configError({ NODE_ENV: 'production', ...SECRETS, DATABASE_URL: 'postgres://u@h/db', SWEEP_CRASH_AFTER: 'sent', REFUND_CRASH_AFTER: 'send-sign' })
        .problems.map((p) => p.variable)
        .sort(),
    ).toEqual(['REFUND_CRASH_AFTER', 'SWEEP_CRASH_AFTER']);
    expect(loadConfig({ ...SECRETS, DATA_DIR: tmp(), REFUND_CRASH_AFTER: 'fund-broadcast' }).REFUND_CRASH_AFTER).toBe('fund-broadcast');
    const ok = loadConfig({ NODE_ENV: 'production', ...SECRETS, DATABASE_URL: 'postgres://u@h/db' });
    expect(ok).toMatchObject({ isProduction: true, DEV_CHAINS: false, generatedSecrets: [] });
    expect(ok.MASTER_KEY).toEqual(Buffer.from(SECRETS.MASTER_KEY, 'hex'));
  });

  it('GraphQL introspection: off in production unless GRAPHQL_INTROSPECTION=true, on elsewhere unless turned off', () => {
    const prod = { NODE_ENV: 'production', ...SECRETS, DATABASE_URL: 'postgres://u@h/db' };
    expect(loadConfig(prod).GRAPHQL_INTROSPECTION).toBe(false);
    expect(loadConfig({ ...prod, GRAPHQL_INTROSPECTION: 'true' }).GRAPHQL_INTROSPECTION).toBe(true);
    expect(loadConfig({ NODE_ENV: 'test', ...SECRETS }).GRAPHQL_INTROSPECTION).toBe(true);
    expect(loadConfig({ NODE_ENV: 'test', ...SECRETS, GRAPHQL_INTROSPECTION: 'false' }).GRAPHQL_INTROSPECTION).toBe(false);
  });

  it('V8 pretenuring: every process turns it off at boot unless V8_ALLOCATION_SITE_PRETENURING=true', () => {
    expect(v8Flags(loadConfig({ NODE_ENV: 'test', ...SECRETS }))).toEqual(['--no-allocation-site-pretenuring']);
    expect(v8Flags(loadConfig({ NODE_ENV: 'test', ...SECRETS, V8_ALLOCATION_SITE_PRETENURING: 'true' }))).toEqual([]);
    expect(configError({ NODE_ENV: 'test', ...SECRETS, V8_ALLOCATION_SITE_PRETENURING: 'maybe' }).message).toMatch(/V8_ALLOCATION_SITE_PRETENURING/);
  });

  it('development generates missing secrets once into DATA_DIR and reuses them', () => {
    const dir = tmp();
    const a = loadConfig({ DATA_DIR: dir });
    expect(a.generatedSecrets.sort()).toEqual(['JWT_SECRET', 'MASTER_KEY']);
    const b = loadConfig({ DATA_DIR: dir });
    expect(b.MASTER_KEY!.equals(a.MASTER_KEY!)).toBe(true);
    expect(b.JWT_SECRET).toBe(a.JWT_SECRET);
    // only the start that wrote the file may say it generated them (main.ts's boot warning)
    expect([a.devSecretsCreated, b.devSecretsCreated]).toEqual([true, false]);
    expect(devSecretsNotice(a)!.message).toMatch(/DEVELOPMENT SECRETS IN USE: generated into the data folder/);
    expect(devSecretsNotice(b)!.message).toMatch(/DEVELOPMENT SECRETS IN USE: read from the data folder/);
    expect(devSecretsNotice(b)!.message).not.toMatch(/generated/);
    expect(devSecretsNotice(b)!.file).toBe(join(dir, 'dev-secrets.json'));
    expect(JSON.parse(readFileSync(join(dir, 'dev-secrets.json'), 'utf8'))).toHaveProperty('MASTER_KEY');
    // A given secret is used as is; base64 works for MASTER_KEY.
    const c = loadConfig({ DATA_DIR: dir, MASTER_KEY: Buffer.alloc(32, 7).toString('base64') });
    expect(c.MASTER_KEY).toEqual(Buffer.alloc(32, 7));
    expect(c.generatedSecrets).toEqual(['JWT_SECRET']);
    // Both given: no notice at all.
    expect(devSecretsNotice(loadConfig({ DATA_DIR: dir, MASTER_KEY: Buffer.alloc(32, 7).toString('base64'), JWT_SECRET: 'x'.repeat(40) }))).toBeNull();
  });
});
