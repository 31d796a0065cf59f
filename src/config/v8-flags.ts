import { setFlagsFromString } from 'node:v8';
import type { Config } from './config.js';

/**
 * The V8 flags a gateway process sets on itself at boot (main.ts), before it serves anything.
 *
 * `--no-allocation-site-pretenuring`, unless V8_ALLOCATION_SITE_PRETENURING=true. V8 counts, per
 * allocation site, how many of its objects survive a young-generation scavenge; above a threshold it
 * allocates that site's objects in old space from then on. Under order load, what a scavenge finds
 * alive is the ≈ 50 requests in flight, so node's HTTP request and response objects and header
 * strings were pretenured: ≈ 3.6 KB per order went to old space and died there, a mark-compact ran
 * every ≈ 9 s, and each scavenge took 6–12 ms (it scans old-to-young references) instead of
 * 1.5–3 ms. Without it they die young, the heap stays flat under load, and the gateway spends ≈ 11 %
 * less CPU per order (docs/benchmarks/orders.md, *Pretenuring*). The flag only steers where new objects
 * are placed, which is why it may be set after the VM has started.
 */
export function v8Flags(config: Pick<Config, 'V8_ALLOCATION_SITE_PRETENURING'>): string[] {
  return config.V8_ALLOCATION_SITE_PRETENURING ? [] : ['--no-allocation-site-pretenuring'];
}

export function applyV8Flags(config: Pick<Config, 'V8_ALLOCATION_SITE_PRETENURING'>): void {
  for (const flag of v8Flags(config)) setFlagsFromString(flag);
}
