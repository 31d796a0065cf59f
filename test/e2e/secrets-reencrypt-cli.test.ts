/**
 * `secrets reencrypt`, the real CLI as an operator runs it, after a key rotation (docs/security.md
 * "Keys at rest"): a gateway under MASTER_KEY k1 with a merchant's every kind of secret (some still
 * sealed as the release before envelope encryption wrote them), then the new key k2 in MASTER_KEY_FILE
 * with k1 in MASTER_KEY_PREVIOUS, the CLI, and a gateway with k2 alone.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SecretBox } from '../../src/common/crypto';
import { LocalKeyEncryptionKey } from '../../src/common/key-encryption';
import { SEALED_COLUMNS } from '../../src/common/secret-reencrypt';
import { createTestDatabase, type TestDatabase } from '../support/db';
import { startTestGateway, TEST_JWT_SECRET, type TestGateway } from '../support/gateway';
import { bareEnv, CLI_JS, requireDist, runProcess } from '../support/process';
import { dataKeys, merchantWithSecrets, sealAsLegacy, sealedKids, useSecrets } from '../support/sealed-secrets';
import { WebhookReceiver } from '../support/webhook-receiver';
import { FAST_WEBHOOKS } from '../support/webhooks';

const k1 = randomBytes(32);
const k2 = randomBytes(32);
const kek1 = new LocalKeyEncryptionKey(k1).id;
const kek2 = new LocalKeyEncryptionKey(k2).id;
const legacyKid = new SecretBox(k1).currentKid;
let db: TestDatabase;
let dir: string;
let receiver: WebhookReceiver;
const gateways: TestGateway[] = [];

beforeAll(async () => {
  requireDist(CLI_JS);
  db = await createTestDatabase();
  dir = mkdtempSync(join(tmpdir(), 'cpg-reencrypt-cli-'));
  receiver = await WebhookReceiver.start();
});
afterAll(async () => {
  for (const gw of gateways.reverse()) await gw.close();
  await receiver?.close();
  await db?.drop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const start = async (env: Record<string, string>) => {
  const gw = await startTestGateway({ ...FAST_WEBHOOKS, ...env }, { db });
  gateways.push(gw);
  return gw;
};
/** What the operator sets for the CLI: the database, the secrets, nothing inherited. */
const cli = (keys: Record<string, string>, ...args: string[]) =>
  runProcess(
    process.execPath,
    [CLI_JS, 'secrets', 'reencrypt', ...args],
    bareEnv({ NODE_ENV: 'test', DATABASE_URL: db.url, DATA_DIR: join(dir, 'cli'), JWT_SECRET: TEST_JWT_SECRET, ...keys }),
    120_000,
  );

it('after a rotation to a key file, reencrypt re-wraps the data key and moves every secret; a gateway with the new key alone works', async () => {
  const a = await start({ MASTER_KEY: k1.toString('hex') });
  const m = await merchantWithSecrets(a, receiver);
  const dek = a.app.box.currentKid;
  await sealAsLegacy(a, new SecretBox(k1)); // as stored before envelope encryption
  // the merchant's second environment key and wallet, written now: under the data key
  await a.app.wallets.walletFor(a.app.orm.em.fork(), m.merchantId, 'production');
  const before = await sealedKids(a);
  expect(before.api_keys).toEqual([legacyKid]);

  // The new key, as a mounted secret: readable by its owner only.
  const keyFile = join(dir, 'master.key');
  writeFileSync(keyFile, `${k2.toString('hex')}\n`);
  chmodSync(keyFile, 0o644);
  const rotating = { MASTER_KEY_FILE: keyFile, MASTER_KEY_PREVIOUS: k1.toString('hex') };
  const refused = await cli(rotating);
  expect(refused.code).toBe(1);
  expect(refused.stderr).toMatch(/MASTER_KEY_FILE: .*mode 0644: group and others must have no access \(chmod 600\)/);
  chmodSync(keyFile, 0o600);

  const run = await cli(rotating);
  expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: expect.not.stringMatching(/error/i) });
  expect(run.stdout).toContain(`data keys: 1 re-wrapped under key-encryption key ${kek2}`);
  for (const { table } of SEALED_COLUMNS) expect(run.stdout).toMatch(new RegExp(`^${table}: [1-9]\\d* re-sealed, \\d+ already under data key ${dek}$`, 'm'));
  expect(run.stdout).toContain(`MASTER_KEY_PREVIOUS can be removed`);

  // Every data key under the new KEK, every sealed column under the data key: nothing under k1.
  expect((await dataKeys(a)).map((d) => ({ id: d.id, kek: d.kek_id }))).toEqual([{ id: dek, kek: kek2 }]);
  for (const kids of Object.values(await sealedKids(a))) expect(kids).toEqual([dek]);
  const again = await cli(rotating, '--json');
  expect(again.code).toBe(0);
  expect(JSON.parse(again.stdout)).toMatchObject({ kek: kek2, key: dek, rewrapped: 0, resealed: 0 });
  const [audit] = await a.app.orm.em
    .fork()
    .execute<{ after: { rewrapped: number; kek: string } }[]>(
      `select after from audit_events where action = 'operator.secrets_reencrypted' order by id limit 1`,
    );
  expect(audit!.after).toMatchObject({ kek: kek2, rewrapped: 1 });

  // The old key alone: refused by name, nothing opened.
  const old = await cli({ MASTER_KEY: k1.toString('hex') });
  expect(old.code).toBe(1);
  expect(old.stderr).toContain(`data key ${dek} is wrapped by key-encryption key ${kek2}, which is neither`);
  expect(kek1).not.toBe(kek2);

  // A gateway with only the new key (the file) serves every secret; so does the one started under k1.
  const c = await start({ MASTER_KEY: '', MASTER_KEY_FILE: keyFile });
  await useSecrets(c, m, receiver);
  await useSecrets(a, m, receiver);
}, 300_000);
