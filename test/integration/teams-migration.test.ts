/**
 * The teams migration keeps every existing login: a merchant login (dashboard user with a
 * merchant_id and a role) made before it becomes its merchant's member with the same role, its
 * password still signs in, and a session opened before the migration still refreshes.
 */
import { randomUUID } from 'node:crypto';
import { migrationsList } from '../../migrations';
import { connectOrm } from '../../src/db/orm';
import { hashPassword } from '../../src/modules/merchants/password';
import { createHash } from 'node:crypto';
import { createEmptyDatabase, type TestDatabase } from '../support/db';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { bearer } from '../support/graphql';
import { http } from '../support/http';

jest.setTimeout(120_000);

let db: TestDatabase;
let gw: TestGateway | undefined;
afterAll(async () => {
  if (gw) await gw.close();
  else await db?.drop();
});

it('an owner and an admin login made before teams sign in afterwards with their roles; an earlier session refreshes', async () => {
  db = await createEmptyDatabase();
  const names = migrationsList.map((m) => m.name);
  const before = names[names.indexOf('Migration20261128223000_teams') - 1]!;
  const orm = await connectOrm(db.url, 2);
  const merchantId = randomUUID();
  const ownerId = randomUUID();
  const adminId = randomUUID();
  const refresh = 'pre-teams-refresh-token';
  try {
    await orm.getMigrator().up({ to: before });
    const c = orm.em.getConnection();
    await c.execute(`insert into merchants (id, name) values (?, 'Old Shop')`, [merchantId]);
    await c.execute(
      `insert into dashboard_users (id, merchant_id, email, password_hash, role) values (?, ?, 'old-owner@shop.test', ?, 'owner'), (?, ?, 'old-admin@shop.test', ?, 'admin')`,
      [ownerId, merchantId, await hashPassword('old owner password'), adminId, merchantId, await hashPassword('old admin password')],
    );
    const sessionId = randomUUID();
    await c.execute(`insert into sessions (id, user_id, expires_at) values (?, ?, now() + interval '1 day')`, [sessionId, adminId]);
    await c.execute(`insert into refresh_tokens (id, session_id, token_hash) values (?, ?, ?)`, [
      randomUUID(),
      sessionId,
      createHash('sha256').update(refresh).digest('hex'),
    ]);
  } finally {
    await orm.close();
  }

  gw = await startTestGateway({ ROLE: 'api' }, { db });
  const sql = (q: string, p: unknown[] = []) => gw!.app.orm.em.fork().getConnection().execute(q, p);
  expect(await sql(`select user_id, merchant_id, role from memberships order by role`)).toEqual([
    { user_id: adminId, merchant_id: merchantId, role: 'admin' },
    { user_id: ownerId, merchant_id: merchantId, role: 'owner' },
  ]);

  for (const [email, password, role] of [
    ['old-owner@shop.test', 'old owner password', 'owner'],
    ['old-admin@shop.test', 'old admin password', 'admin'],
  ] as const) {
    const login = await http(gw.url, '/api/v2/auth/login', { body: { email, password, user_type: 'merchant' } });
    expect(login.status).toBe(200);
    const me = await http(gw.url, '/api/v2/auth/me', { headers: bearer(login.body.data.token) });
    expect(me.body.data).toMatchObject({ user: { email, role }, merchant: { merchant_id: merchantId } });
  }
  const refreshed = await http(gw.url, '/api/v2/auth/refresh', { body: { refresh_token: refresh } });
  expect(refreshed.status).toBe(200);
  expect((await http(gw.url, '/api/v2/auth/me', { headers: bearer(refreshed.body.data.token) })).body.data.user).toMatchObject({
    email: 'old-admin@shop.test',
    role: 'admin',
  });
});
