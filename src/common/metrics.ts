import { Counter, Gauge, register } from 'prom-client';

/**
 * The gateway's Prometheus metrics, on prom-client's default registry (what a `/metrics` route
 * serves). Declared once per process: `getSingleMetric` keeps a second app in the same process (tests,
 * benchmarks) on the same counter instead of a duplicate-registration error.
 */
function counter<L extends string>(name: string, help: string, labelNames: readonly L[]): Counter<L> {
  return (register.getSingleMetric(name) as Counter<L> | undefined) ?? new Counter({ name, help, labelNames });
}

/** Confirmed payments that left the canonical chain (a reorg deeper than the confirmation depth): each is an alarm. */
export const paymentsReorgedTotal = counter('gateway_payments_reorged_total', 'Confirmed payments reorganised away after confirmation (deep reorgs)', ['environment', 'network'] as const);

/** A gauge per (environment, network) on the default registry (served by `/metrics` next to the app's own metrics). */
export function gauge(name: string, help: string): Gauge<'environment' | 'network'> {
  return (register.getSingleMetric(name) as Gauge<'environment' | 'network'> | undefined) ?? new Gauge({ name, help, labelNames: ['environment', 'network'] as const });
}
