import { benchDatabases, percentile } from './support.js';
import { CONNECTIONS, cpuMeter, envPairs, orderClient, restPhase, startOrderGateway } from './orders-load.js';

/**
 * `npm run bench:orders-ab`: two gateways up at once, each on its own database of the same server,
 * loaded in turn — alternating phases of BENCH_AB_PHASE_S seconds (default 4; each recorded after 1 s
 * of load), BENCH_AB_ROUNDS rounds (default 6) after a warm-up of each — so both see the same machine. On a shared machine, where one
 * run's figures move by a third from one minute to the next, this is how a change is judged.
 *
 * Side A and side B differ by what is given:
 * - BENCH_A_ENV / BENCH_B_ENV: extra gateway variables, k=v,k=v;
 * - BENCH_A_NODE_ARGS / BENCH_B_NODE_ARGS: node flags, space-separated;
 * - BENCH_A_MAIN / BENCH_B_MAIN: another build's `dist/src/main.js` (e.g. a worktree of the commit before).
 * Last line: one JSON object with each side's orders/s, p50, p99 and CPU per order.
 */
const PHASE_S = Number(process.env.BENCH_AB_PHASE_S ?? 4);
const ROUNDS = Number(process.env.BENCH_AB_ROUNDS ?? 6);
/** Unrecorded load before each phase's record (restPhase: a phase from rest starts as one burst of 50). */
const LEAD_IN_S = 1;
const SIDES = ['A', 'B'] as const;

async function main() {
  const db = await benchDatabases(SIDES.map((s) => `cpg_bench_ab_${s.toLowerCase()}_${process.pid}`));
  const sides = [];
  try {
    for (const [i, side] of SIDES.entries()) {
      const url = db.urls[i]!;
      const { gw, merchant } = await startOrderGateway(url, envPairs(process.env[`BENCH_${side}_ENV`]), (process.env[`BENCH_${side}_NODE_ARGS`] ?? '').split(' ').filter(Boolean), process.env[`BENCH_${side}_MAIN`]);
      sides.push({ side, gw, url, merchant, client: orderClient(gw.url, merchant.sandbox_api_key), orders: 0, latencies: [] as number[], api: 0, pg: 0, loadgen: 0 });
    }
    for (const s of sides) await restPhase(s.client, s.merchant.merchant_id, 2);
    console.log(`${ROUNDS} rounds of ${PHASE_S} s per side, ${CONNECTIONS} connections …`);
    for (let round = 0; round < ROUNDS; round++) {
      // Alternate which side goes first, so neither always follows the other's writes.
      for (const s of round % 2 ? [...sides].reverse() : sides) {
        const r = await restPhase(s.client, s.merchant.merchant_id, PHASE_S, { leadInS: LEAD_IN_S, onRecord: () => cpuMeter(s.url, s.gw.proc.pid!, s.gw.url) });
        if (r.errors) throw new Error(`${s.side}: ${r.errors} order requests did not answer 201`);
        const cpu = await r.meter(r.count);
        s.orders += r.count;
        s.latencies.push(...r.latencies);
        s.api += cpu.api * r.count;
        s.pg += cpu.pg * r.count;
        s.loadgen += cpu.loadgen * r.count;
        console.log(`  round ${round + 1} ${s.side}: ${(r.count / PHASE_S).toFixed(0)}/s, p99 ${percentile(r.latencies, 99).toFixed(1)} ms, gateway ${cpu.api.toFixed(3)} ms/order, ${cpu.meanBatch.toFixed(1)} per batch, machine idle ${(cpu.idle * 100).toFixed(0)} %`);
      }
    }
    const result = Object.fromEntries(
      sides.map((s) => {
        const sorted = s.latencies.sort((a, b) => a - b);
        return [
          s.side,
          {
            orders_per_s: Math.round(s.orders / (PHASE_S * ROUNDS)),
            p50_ms: Number(percentile(sorted, 50).toFixed(2)),
            p99_ms: Number(percentile(sorted, 99).toFixed(2)),
            api_cpu_ms_per_order: Number((s.api / s.orders).toFixed(4)),
            pg_cpu_ms_per_order: Number((s.pg / s.orders).toFixed(4)),
            loadgen_cpu_ms_per_order: Number((s.loadgen / s.orders).toFixed(4)),
          },
        ];
      }),
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
