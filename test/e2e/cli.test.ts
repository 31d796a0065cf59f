import { cliHarness } from '../support/cli-harness';
import { http } from '../support/http';
import { CLI_JS, lockDist, requireDist, runProcess } from '../support/process';

const harness = cliHarness('cpg-cli-');
const { cli } = harness;
const merchantMe = (path: 'testnet' | 'mainnet', key: string) => http(harness.gw.url, `/api/v2/${path}/merchant/me`, { headers: { 'api-key': key } });

interface Created {
  merchant_id: string;
  email: string;
  sandbox_api_key: string;
  production_api_key: string;
}
let created: Created;

describe('npm run cli -- merchant create … --json', () => {
  it('prints exactly one JSON object on stdout, and its keys work on /testnet and /mainnet', async () => {
    // The exact documented form (it rebuilds dist/ first, so hold the dist lock meanwhile).
    const release = await lockDist();
    let r: Awaited<ReturnType<typeof runProcess>>;
    try {
      r = await runProcess(
        'npm',
        ['run', 'cli', '--', 'merchant', 'create', '--name', 'Acme Store', '--email', 'Owner@Acme.test', '--password', 'correct horse battery', '--json'],
        harness.env,
        180_000,
      );
    } finally {
      release();
    }
    expect({ code: r.code, stderr: r.code === 0 ? '' : r.stderr }).toEqual({ code: 0, stderr: '' });
    const lines = r.stdout.split('\n').filter((l) => l.trim() !== '');
    expect(lines).toHaveLength(1);
    created = JSON.parse(lines[0]!) as Created;
    expect(Object.keys(created).sort()).toEqual(['email', 'merchant_id', 'production_api_key', 'sandbox_api_key']);
    expect(created.merchant_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(created.email).toBe('owner@acme.test');
    expect(created.sandbox_api_key).toMatch(/^cpg_[0-9a-f]{64}$/);
    expect(created.production_api_key).toMatch(/^cpg_[0-9a-f]{64}$/);

    const sandbox = await merchantMe('testnet', created.sandbox_api_key);
    expect(sandbox.body).toMatchObject({ status_code: 200, data: { merchant_id: created.merchant_id, name: 'Acme Store', environment: 'sandbox' } });
    const production = await merchantMe('mainnet', created.production_api_key);
    expect(production.body).toMatchObject({ status_code: 200, data: { merchant_id: created.merchant_id, environment: 'production' } });
    expect((await merchantMe('mainnet', created.sandbox_api_key)).status).toBe(403);
    // The owner can log in to the dashboard with the password given.
    const login = await http(harness.gw.url, '/api/v2/auth/login', {
      body: { email: 'owner@acme.test', password: 'correct horse battery', user_type: 'merchant' },
    });
    expect(login.status).toBe(200);
    // The keys are sealed with the server's MASTER_KEY (webhooks sign with them).
    expect(await harness.gw.app.apiKeys.signingKey(harness.gw.app.orm.em.fork(), created.merchant_id, 'production')).toBe(created.production_api_key);
  });

  it('merchant rotate-key: the new key works at once, the old one fails, the other environment is untouched', async () => {
    requireDist(CLI_JS);
    const r = await cli('merchant', 'rotate-key', '--merchant', created.merchant_id, '--environment', 'sandbox', '--json');
    expect(r.code).toBe(0);
    const lines = r.stdout.split('\n').filter((l) => l.trim() !== '');
    expect(lines).toHaveLength(1);
    const rotated = JSON.parse(lines[0]!) as { merchant_id: string; environment: string; api_key: string };
    expect(rotated).toMatchObject({ merchant_id: created.merchant_id, environment: 'sandbox' });
    expect(rotated.api_key).not.toBe(created.sandbox_api_key);

    const old = await merchantMe('testnet', created.sandbox_api_key);
    expect(old.status).toBe(401);
    expect(old.body).toMatchObject({ status_code: 401, data: { code: 'INVALID_API_KEY' } });
    expect((await merchantMe('testnet', rotated.api_key)).body).toMatchObject({ status_code: 200, data: { merchant_id: created.merchant_id } });
    expect((await merchantMe('mainnet', created.production_api_key)).status).toBe(200);
  });

  it('errors go to stderr with a non-zero exit and nothing on stdout', async () => {
    const dup = await cli('merchant', 'create', '--name', 'Again', '--email', 'owner@acme.test', '--password', 'correct horse battery', '--json');
    expect(dup.code).toBe(1);
    expect(dup.stdout).toBe('');
    expect(dup.stderr).toMatch(/EMAIL_TAKEN/);

    const weak = await cli('merchant', 'create', '--name', 'Weak', '--email', 'weak@acme.test', '--password', 'short', '--json');
    expect(weak.code).toBe(1);
    expect(weak.stdout).toBe('');
    expect(weak.stderr).toMatch(/VALIDATION_FAILED.*password/);

    const missing = await cli('merchant', 'create', '--name', 'No email', '--json');
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toMatch(/--email/);

    const unknown = await cli('merchant', 'rotate-key', '--merchant', '00000000-0000-0000-0000-000000000000', '--environment', 'sandbox');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/MERCHANT_NOT_FOUND/);
    expect(`${dup.stderr}${weak.stderr}${unknown.stderr}`).not.toMatch(/\n\s+at /);
  });
});
