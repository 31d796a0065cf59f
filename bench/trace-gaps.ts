import { readFileSync } from 'node:fs';
import { percentile } from './support.js';

/**
 * `node dist/bench/trace-gaps.js <trace file>`: where a REST phase's tail comes from, from a
 * `BENCH_TRACE` file of bench:orders (one line per request: connection, start ms, latency ms).
 * - the 50 ms windows in which the requests at or above p99 finished: few windows holding many of them
 *   means stalls that hold every connection at once (GC, a core taken away, a slow commit), many
 *   windows holding one or two means an even spread;
 * - the gaps in which no response at all arrived (the whole pipeline stood still).
 * Last line: one JSON object.
 */
const file = process.argv[2];
if (!file) {
  console.error('usage: node dist/bench/trace-gaps.js <trace file>');
  process.exit(2);
}
const rows = readFileSync(file, 'utf8')
  .trim()
  .split('\n')
  .map((l) => l.split(' ').map(Number) as [number, number, number]);
const latencies = rows.map((r) => r[2]).sort((a, b) => a - b);
const p99 = percentile(latencies, 99);
const ends = rows.map((r) => r[1] + r[2]).sort((a, b) => a - b);
const first = ends[0]!;
const windows = new Map<number, number>();
for (const [, start, ms] of rows)
  if (ms >= p99) windows.set(Math.floor((start + ms - first) / 50), (windows.get(Math.floor((start + ms - first) / 50)) ?? 0) + 1);
const gaps = ends.slice(1).map((t, i) => t - ends[i]!);
const over = (ms: number) => gaps.filter((g) => g > ms).length;
const longest = [...gaps].sort((a, b) => b - a).slice(0, 5);
const result = {
  requests: rows.length,
  p50_ms: Number(percentile(latencies, 50).toFixed(2)),
  p99_ms: Number(p99.toFixed(2)),
  windows_with_p99: windows.size,
  windows_total: Math.ceil((ends[ends.length - 1]! - first) / 50),
  most_in_one_window: Math.max(...windows.values()),
  gaps_over_3_ms: over(3),
  gaps_over_8_ms: over(8),
  longest_gaps_ms: longest.map((g) => Number(g.toFixed(1))),
};
console.log(JSON.stringify(result));
