/**
 * What no transfer may do to a watcher, written once and run on every chain:
 *
 * - A zero-amount transfer to a deposit address (anyone can send one for the price of gas, and a
 *   payment link hands out deposit addresses) is not a payment: it is skipped, and it must not stop
 *   the network's watcher — another order paid right after it still completes on time.
 * - A transfer from a deposit address to itself moves nothing into the deposit: only transfers from
 *   other addresses count.
 * - An order whose settlement fails (here: a trigger raises when settlement writes its deposit's
 *   received amount, standing for any fault of that one order) does not hold the others back, and is settled again on a later tick
 *   once the fault is gone, though its payment was already recorded and confirmed.
 *
 * Each chain supplies how to open an order and pay (as in settlement-scenarios.ts), and, where its
 * harness can sign for a deposit address, how the deposit pays itself.
 */
import type { App } from '../../src/app';
import { driverOfFamily } from '../../src/chains/registry';
import { MerchantWallet } from '../../src/modules/deposits/wallet.entity';
import { eventually } from './order-watch';
import { settlementReads, type ChainUnderTest } from './settlement-scenarios';

/** The private key of a deposit address, from its merchant's HD wallet (what sweeps will sign with). */
export async function depositPrivateKey(app: App, address: string): Promise<Uint8Array> {
  const em = app.orm.em.fork();
  const [d] = await em
    .getConnection()
    .execute<{ wallet_id: string; family: 'evm' | 'tron' | 'solana'; derivation_index: number }[]>(
      'select wallet_id, family, derivation_index from deposits where address = ?',
      [address],
    );
  if (!d) throw new Error(`no deposit at ${address}`);
  const wallet = await em.findOneOrFail(MerchantWallet, d.wallet_id);
  return driverOfFamily(d.family).derivePrivateKey(app.wallets.seed(wallet), d.derivation_index);
}

export interface GuardedChain extends ChainUnderTest {
  /** A transfer signed by the deposit address `address` to itself; returns the tx hash (or signature). */
  selfPay?(address: string, amount: bigint): Promise<string>;
}

export function watcherGuardScenarios(chain: GuardedChain): void {
  const { sql, received, orderStatus, paymentsOf } = settlementReads(() => chain.app());

  it('a zero-amount transfer to a deposit address is skipped and does not stop the watcher: another order paid after it completes', async () => {
    const poisoned = await chain.newOrder();
    const other = await chain.newOrder('120000');
    const poison = await chain.pay(poisoned.address, 0n);
    const paid = await chain.pay(other.address, other.total);
    await chain.makeFinal();
    await other.watch.until('Success');
    expect(await paymentsOf(other.orderId)).toEqual([expect.objectContaining({ tx_hash: paid, amount: other.total.toString(), status: 'confirmed' })]);
    // The zero transfer left no row anywhere, and the poisoned order is still payable.
    expect(await sql('select id from payments where tx_hash = ?', [poison])).toEqual([]);
    expect(await orderStatus(poisoned.orderId)).toBe('Created');
    await chain.pay(poisoned.address, poisoned.total);
    await chain.makeFinal();
    await poisoned.watch.until('Success');
  });

  it('a transfer from a deposit address to itself is not a receipt', async () => {
    if (!chain.selfPay) return; // this chain's harness cannot sign for a deposit address
    const o = await chain.newOrder();
    const part = o.total / 2n;
    await chain.pay(o.address, part);
    await chain.makeFinal();
    await eventually(async () => (await received(o.orderId)) === part, 'first payment confirmed and settled');
    const self = await chain.selfPay(o.address, part);
    // A marker from the customer after the self-transfer: once it is counted, the self-transfer was scanned too.
    const marker = await chain.pay(o.address, 1n);
    await chain.makeFinal();
    await eventually(async () => (await paymentsOf(o.orderId)).some((p) => p.tx_hash === marker && p.status === 'confirmed'), 'marker payment confirmed');
    await eventually(async () => (await received(o.orderId)) === part + 1n, 'marker settled');
    expect((await paymentsOf(o.orderId)).map((p) => p.tx_hash)).not.toContain(self);
    expect(await orderStatus(o.orderId)).toBe('Processing'); // counted twice, part + part + 1 would have completed it
  });

  it('an order whose settlement fails is settled again on a later tick; the others settle meanwhile', async () => {
    const broken = await chain.newOrder();
    const fine = await chain.newOrder('110000');
    const fn = `fail_settle_${broken.orderId.replace(/-/g, '')}`;
    await sql(`create function ${fn}() returns trigger language plpgsql as $$ begin raise exception 'injected settlement fault'; end $$`);
    await sql(
      `create trigger ${fn} before update on deposits for each row when (old.order_id = '${broken.orderId}' and new.amount_received is distinct from old.amount_received) execute function ${fn}()`,
    );
    try {
      await chain.pay(broken.address, broken.total);
      await chain.pay(fine.address, fine.total);
      await chain.makeFinal();
      await fine.watch.until('Success');
      await eventually(async () => (await paymentsOf(broken.orderId)).some((p) => p.status === 'confirmed'), 'the broken order’s payment confirmed');
      expect(await orderStatus(broken.orderId)).not.toBe('Success');
    } finally {
      await sql(`drop trigger ${fn} on deposits`);
      await sql(`drop function ${fn}()`);
    }
    await broken.watch.until('Success');
  });
}
