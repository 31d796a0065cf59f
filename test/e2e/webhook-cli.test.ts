import { cliHarness } from '../support/cli-harness';
import { createMerchant } from '../support/fixtures';

const harness = cliHarness('cpg-cli-webhook-');
const { cli } = harness;
const urls = async (merchantId: string) =>
  (
    await harness.gw.app.orm.em
      .fork()
      .getConnection()
      .execute(`select notification_url_sandbox as sandbox, notification_url_production as production from merchants where id = ?`, [merchantId])
  )[0];

it('merchant set-webhook sets, validates and clears the URL of one environment', async () => {
  const m = await createMerchant(harness.gw.app);
  const set = await cli(
    'merchant',
    'set-webhook',
    '--merchant',
    m.merchantId,
    '--environment',
    'sandbox',
    '--url',
    'http://localhost:8080/hooks/cpg',
    '--json',
  );
  expect({ code: set.code, stderr: set.stderr }).toEqual({ code: 0, stderr: '' });
  expect(JSON.parse(set.stdout)).toEqual({ merchant_id: m.merchantId, environment: 'sandbox', notification_url: 'http://localhost:8080/hooks/cpg' });
  expect(await urls(m.merchantId)).toEqual({ sandbox: 'http://localhost:8080/hooks/cpg', production: null });

  const refused = await cli('merchant', 'set-webhook', '--merchant', m.merchantId, '--environment', 'production', '--url', 'http://localhost:8080/hooks/cpg');
  expect(refused.code).toBe(1);
  expect(refused.stderr).toMatch(/NOTIFICATION_URL_REJECTED: notification_url must use https in production/);

  const cleared = await cli('merchant', 'set-webhook', '--merchant', m.merchantId, '--environment', 'sandbox', '--url', '');
  expect(cleared.code).toBe(0);
  expect(cleared.stdout.trim()).toBe('sandbox notification_url cleared');
  expect(await urls(m.merchantId)).toEqual({ sandbox: null, production: null });
});
