import type { EntityManager } from '@mikro-orm/postgresql';
import { confirm } from './sweep-confirm.step.js';
import { fund } from './sweep-fund.step.js';
import { plan } from './sweep-plan.step.js';
import { reclaim } from './sweep-reclaim.step.js';
import { send } from './sweep-send.step.js';
import { SweepContext, type SweepEngineOptions } from './sweep-step.context.js';
import { track } from './sweep-track.step.js';

export { EMPTY_READS_TO_FAIL } from './sweep-send.step.js';
export type { SweepEngineOptions, SweepStep } from './sweep-step.context.js';

/**
 * The sweep engine of one environment and network (one job, one runner at a time through Agenda's
 * lock; a second runner is harmless). Each tick advances every sweep one step from what the database
 * says, so a tick interrupted anywhere (SIGKILL) is finished by the next one. One file per step:
 *
 * 1. track (sweep-track.step.ts): stored transactions are (re)broadcast, their state read, included
 *    ones move their sweeps, stuck ones are replaced by a fee bump, dead ones send their sweeps back;
 * 2. confirm (sweep-confirm.step.ts): sent sweeps final at the confirmation depth are confirmed; a
 *    replaced block sends them back to sending;
 * 2b. reclaim (sweep-reclaim.step.ts): lent gas (TRON energy) is taken back from confirmed sweeps;
 * 3. plan (sweep-plan.step.ts): eligible deposits that are not dust get a `planned` sweep;
 * 4. fund (sweep-fund.step.ts): planned sweeps get their gas, waiting while the tank cannot pay;
 * 5. send (sweep-send.step.ts): funded sweeps read the deposit's balance, sign the transfer of all of it.
 *
 * Every transaction is signed outside any database transaction (RPC) and then stored, with its nonce
 * taken from `signer_nonces` and its sweeps moved, in ONE short database transaction; only then is it
 * broadcast (sweep-tx.store.ts). A crash before the store loses an unsent signature only; after it,
 * the stored raw transaction is broadcast again. Nonces are never skipped. What the engine reads and
 * records besides transactions (candidates, holds, schedules, requests) is in sweep.store.ts; what
 * each sweep cost in sweep-fees.ts.
 */
export class SweepEngine {
  private readonly ctx: SweepContext | null;

  constructor(private readonly o: SweepEngineOptions) {
    this.ctx = o.adapter.sweeps ? new SweepContext(o) : null;
  }

  /** Whether this network can sweep here (the adapter implements sweeps and the environment has a gas tank). */
  get active(): boolean {
    return this.ctx !== null && this.o.tanks.enabled(this.o.environment, this.o.network);
  }

  async tick(em: EntityManager): Promise<void> {
    const ctx = this.ctx;
    if (!ctx || !this.active) return;
    await track(ctx, em);
    await confirm(ctx, em);
    // Taking lent gas back must never hold up new sweeps: a failure is logged and asked again next tick.
    await reclaim(ctx, em).catch((err: unknown) => {
      if ((err as { fatal?: boolean }).fatal) throw err;
      ctx.warn({}, err, 'sweep gas reclaim failed; retrying next tick');
    });
    await plan(ctx, em);
    await fund(ctx, em);
    await send(ctx, em);
  }
}
