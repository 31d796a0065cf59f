/**
 * With one confirmation a block's payments are final as they are recorded: the watcher confirms them
 * and settles their orders inside the recording transaction (one commit from detection to Success),
 * under a savepoint. An order that cannot settle there must not take the recording down with it:
 * its payment stays recorded and confirmed, the cursor moves on, the other orders of later blocks
 * settle, and the order itself settles once it can. Real anvil, the real watcher job; the failure is
 * a PostgreSQL trigger this test puts on `orders` (refusing that one order's Success), standing for
 * anything that makes a settlement fail (a lock, a deadlock, a constraint).
 */
import { CUSTOMER_PRIVATE_KEYS, startDevChains, type DevChains } from '../../src/devchain';
import { createMerchant } from '../support/fixtures';
import { startTestGateway, type TestGateway } from '../support/gateway';
import { eventually } from '../support/order-watch';
import { fundedCustomer, orderStatus, pay, paymentsOf, placeOrder, sql, WATCH_ENV, type Merchant } from '../support/evm-harness';

let chains: DevChains;
let gw: TestGateway;
let m: Merchant;
let customer: string;

beforeAll(async () => {
  chains = await startDevChains();
  gw = await startTestGateway({ ...WATCH_ENV, SANDBOX_ETHEREUM_CONFIRMATIONS: '1' }, { devChains: chains });
  m = await createMerchant(gw.app);
  customer = await fundedCustomer(chains, CUSTOMER_PRIVATE_KEYS[0]!);
});
afterAll(async () => {
  await sql(gw.app, 'drop trigger if exists refuse_success on orders').catch(() => undefined);
  await sql(gw.app, 'drop function if exists refuse_success()').catch(() => undefined);
  await gw?.close();
  await chains?.stop();
});

it('an order that cannot settle in the recording transaction keeps its payment recorded and confirmed, holds back no other order, and settles once it can', async () => {
  const stuck = await placeOrder(gw.url, gw.app, m, 'ETHEREUM');
  await sql(
    gw.app,
    `create or replace function refuse_success() returns trigger language plpgsql as $$
     begin
       if new.status = 'Success' and new.order_no = '${stuck.orderNo}' then raise exception 'refused by the test'; end if;
       return new;
     end $$`,
  );
  await sql(gw.app, `create trigger refuse_success before update on orders for each row execute function refuse_success()`);

  await pay(chains.ETHEREUM, customer, stuck.address, stuck.total);
  // recorded and confirmed although its order could not settle (the recording committed)
  await eventually(async () => (await paymentsOf(gw.app, stuck.orderId)).some((p) => p.status === 'confirmed'), 'payment recorded and confirmed');
  expect(await orderStatus(gw.url, m, stuck.orderNo)).not.toBe('Success');

  // the cursor moved on: a later block's order settles as usual
  const next = await placeOrder(gw.url, gw.app, m, 'ETHEREUM');
  await pay(chains.ETHEREUM, customer, next.address, next.total);
  await eventually(async () => (await orderStatus(gw.url, m, next.orderNo)) === 'Success', 'the next order settles');
  expect(await orderStatus(gw.url, m, stuck.orderNo)).not.toBe('Success');

  // once it can, the stuck order settles from its recorded payment (no new transfer)
  await sql(gw.app, 'drop trigger refuse_success on orders');
  await eventually(async () => (await orderStatus(gw.url, m, stuck.orderNo)) === 'Success', 'the stuck order settles', 30_000);
  expect((await paymentsOf(gw.app, stuck.orderId)).map((p) => p.status)).toEqual(['confirmed']);
});
