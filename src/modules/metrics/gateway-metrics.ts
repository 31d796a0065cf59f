import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Environment, Network } from '../../common/environment.js';

/** Where a chain watcher stands (ChainWatcher.lag()). */
export interface WatcherLagSnapshot {
  environment: Environment;
  network: Network;
  /** Newest block/slot the node reported at the last tick (null before the first). */
  headBlock: bigint | null;
  /** Newest block/slot scanned and committed (its cursor). */
  scannedBlock: bigint | null;
  /** When the watcher last had everything up to the head scanned (ms since epoch; null: never yet). */
  caughtUpAt: number | null;
  /** When this watcher object was created (the lag clock's start before it first catches up). */
  startedAt: number;
}

export interface WatcherLagSource {
  lag(): WatcherLagSnapshot;
  /** The network's RPC providers, host only, with their chain-identity state. */
  providers?(): { provider: string; state: string }[];
}

/** An adapter's provider scores (ChainAdapter.providerHealth), read at scrape time. */
export interface ProviderHealthSource {
  environment: Environment;
  network: Network;
  snapshot(): { provider: string; state: 'healthy' | 'demoted'; rank: number; errorRate: number; latencyMs: number | null }[];
}

/** Figures read from the database at scrape time (the same for every process of a deployment). */
export interface DatabaseSample {
  openDeposits: { environment: string; network: string; count: number }[];
  webhookBacklog: { state: string; count: number }[];
  webhookOutbox: number;
  webhookOldestPendingAgeS: number;
}

export interface GatewayMetricsOptions {
  /** Reads the database figures; failures are counted, never thrown at the scraper. */
  sample?: () => Promise<DatabaseSample>;
  /** Process metrics (CPU, memory, event-loop lag); off in tests that build many apps in one process. */
  processMetrics?: boolean;
}

const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * One Prometheus registry per process (never prom-client's global one: tests run several gateways in
 * one process). Counters are this process's own (sum them across instances); the database gauges
 * are deployment-wide (take the max across instances). Names and labels: docs/operations.md.
 */
export class GatewayMetrics {
  readonly registry = new Registry();
  readonly ordersCreated: Counter<'environment' | 'source'>;
  /** Group-committed order inserts: statements, and the orders they carried (rows / batches = mean batch size). */
  readonly orderBatches: Counter<string>;
  readonly orderBatchRows: Counter<string>;
  /** Rate-limit statements on the shared store, and the requests they settled (hits / batches = mean batch size). */
  readonly rateLimitBatches: Counter<string>;
  readonly rateLimitHits: Counter<string>;
  readonly ordersPaid: Counter<'environment'>;
  readonly orderTransitions: Counter<'environment' | 'from' | 'to'>;
  readonly rpcErrors: Counter<'environment' | 'network' | 'provider' | 'reason'>;
  /** Requests sent to chain RPC providers: the RPC budget (host only, by method; each item of a batch counts). */
  readonly rpcCalls: Counter<'environment' | 'network' | 'provider' | 'method'>;
  readonly watcherTickFailures: Counter<'environment' | 'network'>;
  /** Providers refused for serving another chain (chain id / genesis), per provider host. */
  readonly providersRefused: Counter<'environment' | 'network' | 'provider'>;
  /** Sandbox watchers that followed a new chain behind their URLs (restarted dev chains). */
  readonly chainIdentityChanges: Counter<'environment' | 'network'>;
  readonly jobRuns: Counter<'job' | 'outcome'>;
  readonly jobDuration: Histogram<'job'>;
  readonly httpDuration: Histogram<'method' | 'route' | 'status'>;
  /** Confirmed payments that left the canonical chain (a reorg deeper than the confirmation depth): each is an alarm. */
  readonly paymentsReorged: Counter<'environment' | 'network'>;
  /** The last reconciliation of each network (ReconciliationService): pairs whose balance differs from the ledger, and pairs compared. */
  readonly reconciliationMismatches: Gauge<'environment' | 'network'>;
  readonly reconciliationChecked: Gauge<'environment' | 'network'>;
  private readonly sampleFailures: Counter<string>;
  private readonly watchers = new Set<WatcherLagSource>();
  private readonly providerSources = new Set<ProviderHealthSource>();

  constructor(private readonly opts: GatewayMetricsOptions = {}) {
    const registers = [this.registry];
    this.ordersCreated = new Counter({
      name: 'cpg_orders_created_total',
      help: 'Orders created by this process',
      labelNames: ['environment', 'source'],
      registers,
    });
    this.orderBatches = new Counter({
      name: 'cpg_order_insert_batches_total',
      help: 'Order insert statements sent by group commit (one per batch)',
      registers,
    });
    this.orderBatchRows = new Counter({ name: 'cpg_order_insert_batch_rows_total', help: 'Orders carried by group-committed insert statements', registers });
    this.rateLimitBatches = new Counter({
      name: 'cpg_rate_limit_batches_total',
      help: 'Statements that settled rate-limit hits on the shared PostgreSQL store (one per batch)',
      registers,
    });
    this.rateLimitHits = new Counter({ name: 'cpg_rate_limit_hits_total', help: 'Rate-limit hits settled on the shared PostgreSQL store', registers });
    this.ordersPaid = new Counter({
      name: 'cpg_orders_paid_total',
      help: 'Orders that became Success in this process',
      labelNames: ['environment'],
      registers,
    });
    this.orderTransitions = new Counter({
      name: 'cpg_order_transitions_total',
      help: 'Order status transitions written by this process',
      labelNames: ['environment', 'from', 'to'],
      registers,
    });
    this.rpcErrors = new Counter({
      name: 'cpg_rpc_errors_total',
      help: 'Failed chain RPC attempts, per provider host and reason (rate_limited, timeout, malformed, http_5xx, network, behind, wrong_chain)',
      labelNames: ['environment', 'network', 'provider', 'reason'],
      registers,
    });
    this.rpcCalls = new Counter({
      name: 'cpg_rpc_calls_total',
      help: 'Requests sent to chain RPC providers (the RPC budget), per provider host and method; each item of a JSON-RPC batch counts, retries and failover attempts too',
      labelNames: ['environment', 'network', 'provider', 'method'],
      registers,
    });
    this.watcherTickFailures = new Counter({
      name: 'cpg_watcher_tick_failures_total',
      help: 'Chain watcher polls that failed (RPC or database), retried on the next poll',
      labelNames: ['environment', 'network'],
      registers,
    });
    this.providersRefused = new Counter({
      name: 'cpg_rpc_provider_refused_total',
      help: 'RPC providers refused for serving another chain than the watched one (chain id or genesis hash), per provider host',
      labelNames: ['environment', 'network', 'provider'],
      registers,
    });
    this.chainIdentityChanges = new Counter({
      name: 'cpg_chain_identity_changes_total',
      help: 'Sandbox watchers that found every provider on a new chain (restarted dev chain) and restarted their cursor on it',
      labelNames: ['environment', 'network'],
      registers,
    });
    this.jobRuns = new Counter({ name: 'cpg_job_runs_total', help: 'Scheduled job runs finished by this process', labelNames: ['job', 'outcome'], registers });
    this.jobDuration = new Histogram({
      name: 'cpg_job_duration_seconds',
      help: 'Duration of scheduled job runs',
      labelNames: ['job'],
      buckets: [0.01, 0.1, 0.5, 1, 5, 15, 30, 60, 120],
      registers,
    });
    this.httpDuration = new Histogram({
      name: 'cpg_http_request_duration_seconds',
      help: 'HTTP request latency by route pattern',
      labelNames: ['method', 'route', 'status'],
      buckets: HTTP_BUCKETS,
      registers,
    });
    // The `gateway_` names are the operators' alarms (docs/watchers.md), kept as documented.
    this.paymentsReorged = new Counter({
      name: 'gateway_payments_reorged_total',
      help: 'Confirmed payments reorganised away after confirmation (deep reorgs)',
      labelNames: ['environment', 'network'],
      registers,
    });
    this.reconciliationMismatches = new Gauge({
      name: 'gateway_reconciliation_mismatches',
      help: 'Deposit (address, token) pairs whose on-chain balance differs from the ledger at the last reconciliation',
      labelNames: ['environment', 'network'],
      registers,
    });
    this.reconciliationChecked = new Gauge({
      name: 'gateway_reconciliation_checked',
      help: 'Deposit (address, token) pairs compared at the last reconciliation',
      labelNames: ['environment', 'network'],
      registers,
    });
    this.sampleFailures = new Counter({ name: 'cpg_metrics_sample_failures_total', help: 'Scrapes whose database figures could not be read', registers });

    const watchers = this.watchers;
    const lagGauge = (name: string, help: string, value: (s: WatcherLagSnapshot, now: number) => number | null) =>
      new Gauge({
        name,
        help,
        labelNames: ['environment', 'network'],
        registers,
        collect() {
          this.reset();
          const now = Date.now();
          for (const w of watchers) {
            const s = w.lag();
            const v = value(s, now);
            if (v !== null) this.set({ environment: s.environment, network: s.network }, v);
          }
        },
      });
    lagGauge('cpg_watcher_head_block', 'Chain head (block or slot) seen by the watcher', (s) => (s.headBlock === null ? null : Number(s.headBlock)));
    lagGauge('cpg_watcher_scanned_block', 'Newest block or slot the watcher has scanned and committed', (s) =>
      s.scannedBlock === null ? null : Number(s.scannedBlock),
    );
    lagGauge('cpg_watcher_lag_blocks', 'Blocks (slots) between the chain head and what the watcher has scanned', (s) =>
      s.headBlock === null || s.scannedBlock === null ? null : Math.max(0, Number(s.headBlock - s.scannedBlock)),
    );
    new Gauge({
      name: 'cpg_rpc_provider_state',
      help: 'Each RPC provider as the chain-identity gate last saw it: 1 for the state it is in (ok, refused: another chain, unknown: not verified or unreachable)',
      labelNames: ['environment', 'network', 'provider', 'state'],
      registers,
      collect() {
        this.reset();
        for (const w of watchers) {
          const s = w.lag();
          for (const p of w.providers?.() ?? []) this.set({ environment: s.environment, network: s.network, provider: p.provider, state: p.state }, 1);
        }
      },
    });
    const sources = this.providerSources;
    const providerGauge = (name: string, help: string, value: (p: ReturnType<ProviderHealthSource['snapshot']>[number]) => number | null) =>
      new Gauge({
        name,
        help,
        labelNames: ['environment', 'network', 'provider'],
        registers,
        collect() {
          this.reset();
          for (const src of sources) {
            for (const p of src.snapshot()) {
              const v = value(p);
              if (v !== null) this.set({ environment: src.environment, network: src.network, provider: p.provider }, v);
            }
          }
        },
      });
    providerGauge(
      'cpg_rpc_provider_demoted',
      'RPC providers demoted by their health score (1: skipped until their backoff ends, then retried; 0: in use by rank)',
      (p) => (p.state === 'demoted' ? 1 : 0),
    );
    providerGauge('cpg_rpc_provider_rank', 'Order in which calls try the RPC providers (0: tried first)', (p) => p.rank);
    providerGauge('cpg_rpc_provider_error_rate', 'Recent share of failed attempts per RPC provider (exponentially weighted, 0-1)', (p) => p.errorRate);
    providerGauge('cpg_rpc_provider_latency_seconds', 'Recent answer time per RPC provider (exponentially weighted)', (p) =>
      p.latencyMs === null ? null : p.latencyMs / 1000,
    );
    lagGauge('cpg_watcher_lag_seconds', 'Seconds since the watcher last had everything up to the chain head scanned (0 while caught up)', (s, now) =>
      Math.max(0, (now - (s.caughtUpAt ?? s.startedAt)) / 1000),
    );

    this.openDeposits = new Gauge({ name: 'cpg_open_deposits', help: 'Deposits waiting for payment', labelNames: ['environment', 'network'], registers });
    this.webhookBacklog = new Gauge({
      name: 'cpg_webhook_backlog',
      help: 'Webhook deliveries not yet delivered or failed, by state',
      labelNames: ['state'],
      registers,
    });
    this.webhookOutbox = new Gauge({ name: 'cpg_webhook_outbox_backlog', help: 'Order events not yet turned into webhook deliveries', registers });
    this.webhookOldest = new Gauge({
      name: 'cpg_webhook_oldest_pending_age_seconds',
      help: 'Age of the oldest webhook delivery still pending (0 when none)',
      registers,
    });

    if (opts.processMetrics) collectDefaultMetrics({ register: this.registry, prefix: 'cpg_' });
  }

  private readonly openDeposits: Gauge<'environment' | 'network'>;
  private readonly webhookBacklog: Gauge<'state'>;
  private readonly webhookOutbox: Gauge<string>;
  private readonly webhookOldest: Gauge<string>;

  /** Watchers report their lag at scrape time. */
  trackWatcher(watcher: WatcherLagSource): void {
    this.watchers.add(watcher);
  }

  /** An adapter's provider scores, reported at scrape time. */
  trackProviders(source: ProviderHealthSource): void {
    this.providerSources.add(source);
  }

  observeHttp(method: string, route: string, status: number, seconds: number): void {
    this.httpDuration.observe({ method, route, status: String(status) }, seconds);
  }

  /** The exposition text: database figures are read first (a failure leaves the last values and is counted). */
  async render(): Promise<string> {
    if (this.opts.sample) {
      try {
        const s = await this.opts.sample();
        this.openDeposits.reset();
        for (const r of s.openDeposits) this.openDeposits.set({ environment: r.environment, network: r.network }, r.count);
        this.webhookBacklog.reset();
        for (const state of ['pending', 'sending']) this.webhookBacklog.set({ state }, s.webhookBacklog.find((r) => r.state === state)?.count ?? 0);
        this.webhookOutbox.set(s.webhookOutbox);
        this.webhookOldest.set(s.webhookOldestPendingAgeS);
      } catch {
        this.sampleFailures.inc();
      }
    }
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
