import { benchDatabases, envPairs, percentile } from './support.js';
import { CONNECTIONS, interleave, orderClient, restPhase, restSide, startOrderGateway } from './orders-load.js';

/**
 * `npm run bench:orders-ab`: two gateways up at once, each on its own database of the same server,
 * loaded in turn — alternating phases of BENCH_AB_PHASE_S seconds (default 4; each recorded after 1 s
 * of load, restSide), BENCH_AB_ROUNDS rounds (default 6) after a warm-up of each — so both see the
 * same machine. On a shared machine, where one run's figures move by a third from one minute to the
 * next, this is how a change is judged.
 *
 * Side A and side B differ by what is given:
 * - BENCH_A_ENV / BENCH_B_ENV: extra gateway variables, k=v,k=v;
 * - BENCH_A_NODE_ARGS / BENCH_B_NODE_ARGS: node flags, space-separated;
 * - BENCH_A_MAIN / BENCH_B_MAIN: another build's `dist/src/main.js` (e.g. a worktree of the commit before).
 * Last line: one JSON object with each side's orders/s, p50, p99, CPU per order, and the share of the
 * time its event loop waited for a core (orders-load.ts, runQueueWaitMs).
 */
const PHASE_S = Number(process.env.BENCH_AB_PHASE_S ?? 4);
const ROUNDS = Number(process.env.BENCH_AB_ROUNDS ?? 6);
const SIDES = ['A', 'B'] as const;

async function main() {
  const db = await benchDatabases(SIDES.map((s) => `cpg_bench_ab_${s.toLowerCase()}_${process.pid}`));
  const sides = [];
  try {
    for (const [i, side] of SIDES.entries()) {
      const url = db.urls[i]!;
      const { gw, merchant } = await startOrderGateway(
        url,
        envPairs(process.env[`BENCH_${side}_ENV`]),
        (process.env[`BENCH_${side}_NODE_ARGS`] ?? '').split(' ').filter(Boolean),
        process.env[`BENCH_${side}_MAIN`],
      );
      const client = orderClient(gw.url, merchant.sandbox_api_key);
      sides.push({ gw, client, round: restSide(side, client, merchant.merchant_id, url, gw.proc.pid!, gw.url), merchantId: merchant.merchant_id });
    }
    for (const s of sides) await restPhase(s.client, s.merchantId, 2);
    console.log(`${ROUNDS} rounds of ${PHASE_S} s per side, ${CONNECTIONS} connections …`);
    const totals = await interleave(
      sides.map((s) => s.round),
      ROUNDS,
      PHASE_S,
    );
    const result = Object.fromEntries(
      Object.entries(totals).map(([side, t]) => [
        side,
        {
          orders_per_s: Math.round(t.perS),
          p50_ms: Number(percentile(t.latencies, 50).toFixed(2)),
          p99_ms: Number(percentile(t.latencies, 99).toFixed(2)),
          api_cpu_ms_per_order: Number(t.cpu!.api.toFixed(4)),
          pg_cpu_ms_per_order: Number(t.cpu!.pg.toFixed(4)),
          loadgen_cpu_ms_per_order: Number(t.cpu!.loadgen.toFixed(4)),
          api_run_queue_wait_pct: Number((t.cpu!.apiWait * 100).toFixed(1)),
        },
      ]),
    );
    console.log(JSON.stringify(result));
  } finally {
    for (const s of sides) {
      await s.client.close();
      await s.gw.stop();
    }
    await db.release();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
