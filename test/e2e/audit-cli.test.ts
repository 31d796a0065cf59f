import pg from 'pg';
import { cliHarness } from '../support/cli-harness';
import { createMerchant } from '../support/fixtures';
import { CLI_JS, lockDist, requireDist, runProcess } from '../support/process';

/** `npm run cli -- audit verify`, the real process: exit 0 on a clean trail, 1 naming the row edited past the trigger. */
const harness = cliHarness('cpg-audit-cli-');

it('audit verify: exit 0 on a clean chain, non-zero naming the row after a tamper', async () => {
  const m = await createMerchant(harness.gw.app);
  const release = await lockDist();
  let clean: Awaited<ReturnType<typeof runProcess>>;
  try {
    clean = await runProcess('npm', ['run', '--silent', 'cli', '--', 'audit', 'verify'], harness.env, 180_000);
  } finally {
    release();
  }
  expect({ code: clean.code, stdout: clean.stdout }).toEqual({ code: 0, stdout: expect.stringMatching(/audit trail intact/) });

  const c = new pg.Client({ connectionString: harness.gw.db.url });
  await c.connect();
  let id: string;
  try {
    const r = await c.query<{ id: string }>(`select id::text from audit_events where merchant_id = $1 order by id limit 1`, [m.merchantId]);
    id = r.rows[0]!.id;
    await c.query('begin');
    await c.query(`set local session_replication_role = replica`);
    await c.query(`update audit_events set after = '{"name":"forged"}'::jsonb where id = $1`, [id]);
    await c.query('commit');
  } finally {
    await c.end();
  }
  requireDist(CLI_JS);
  const broken = await harness.cli('audit', 'verify');
  expect(broken.code).not.toBe(0);
  expect(broken.stdout + broken.stderr).toContain(`BROKEN at row ${id}`);
}, 240_000);
