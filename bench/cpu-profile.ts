import { readFileSync } from 'node:fs';

/**
 * `node dist/bench/cpu-profile.js <file.cpuprofile> [--from-ms N]`: the CPU budget of the gateway
 * per request category, from a `node --cpu-prof` profile (bench:orders with BENCH_CPU_PROF). Each
 * sample goes to the category of the deepest frame on its stack that a rule names (so time in
 * node's crypto under the API-key lookup counts as auth, JSON.stringify under the envelope as
 * serialisation). Last line: one JSON object, shares in percent of busy (non-idle) time.
 */

interface Node {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}
interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
}

const RULES: [string, RegExp][] = [
  ['logging', /node_modules\/(pino|pino-std-serializers|sonic-boom|thread-stream)\/|\/src\/http\/logger\.js/],
  ['validation', /node_modules\/zod\/|\/src\/common\/validation\.js|\/src\/rest\/[a-z-]+\.mappers\.js|\/src\/modules\/[a-z-]+\/[a-z-]+\.commands\.js/],
  ['serialisation', /\/src\/rest\/envelope\.js|\/src\/rest\/[a-z-]+\.views\.js/],
  ['auth + rate limit', /\/src\/modules\/(auth|api-keys|merchants|limits)\/|\/src\/common\/(access|crypto)\.js/],
  ['SQL (driver, pool, ORM)', /node_modules\/(pg|pg-protocol|pg-pool|pg-types|postgres-[a-z]+|knex|tarn|@mikro-orm\/[a-z]+)\/|\/src\/db\//],
  ['order logic (ids, checkout key, group commit)', /\/src\/modules\/orders\/|\/src\/common\/group-commit\.js/],
  ['routing + request plumbing', /\/src\/rest\/|\/src\/http\/|\/src\/common\//],
  ['HTTP parse', /node:_http_server|node:_http_incoming|node:_http_common/],
  ['HTTP write + sockets', /node:_http_outgoing|node:net|node:internal\/stream_base_commons|node:internal\/streams/],
];

function main() {
  const [file, ...rest] = process.argv.slice(2);
  if (!file) throw new Error('usage: cpu-profile <file.cpuprofile> [--from-ms N]');
  const fromMs = rest[0] === '--from-ms' ? Number(rest[1]) : 0;
  const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const catOf = new Map<number, string>();
  const categorise = (id: number): string => {
    const cached = catOf.get(id);
    if (cached) return cached;
    const n = byId.get(id)!;
    let cat: string | undefined;
    if (n.callFrame.functionName === '(idle)') cat = 'idle';
    else if (n.callFrame.functionName === '(garbage collector)') cat = 'GC';
    else if (n.callFrame.functionName === '(program)') cat = 'native (program)';
    else if (n.callFrame.url.startsWith('node:internal/modules/')) cat = 'startup';
    else {
      const rule = RULES.find(([, re]) => re.test(n.callFrame.url));
      if (rule) cat = rule[0];
      else {
        const up = parent.get(id);
        cat = up === undefined || byId.get(up)!.callFrame.functionName === '(root)' ? 'other' : categorise(up);
      }
    }
    catOf.set(id, cat);
    return cat;
  };
  // Deepest matching frame wins: walk from the leaf up and stop at the first frame a rule names.
  const totals = new Map<string, number>();
  let t = 0;
  p.samples.forEach((id, i) => {
    t += p.timeDeltas[i] ?? 0;
    if (t / 1000 < fromMs) return;
    const cat = categorise(id);
    totals.set(cat, (totals.get(cat) ?? 0) + (p.timeDeltas[i] ?? 0));
  });
  // Module loading (start-up) and idle are not the requests' budget.
  const counted = [...totals.entries()].filter(([k]) => k !== 'idle' && k !== 'startup');
  const busy = counted.reduce((a, [, v]) => a + v, 0);
  const rows = counted.sort((a, b) => b[1] - a[1]);
  for (const [k, v] of rows) console.log(`${((v / busy) * 100).toFixed(1).padStart(5)} %  ${(v / 1000).toFixed(0).padStart(7)} ms  ${k}`);
  console.log(
    `busy ${(busy / 1000).toFixed(0)} ms, start-up ${((totals.get('startup') ?? 0) / 1000).toFixed(0)} ms, idle ${((totals.get('idle') ?? 0) / 1000).toFixed(0)} ms`,
  );
  console.log(JSON.stringify(Object.fromEntries(rows.map(([k, v]) => [k, Number(((v / busy) * 100).toFixed(1))]))));
}

main();
