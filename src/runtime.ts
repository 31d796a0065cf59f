import type { Environment } from './common/environment.js';
import type { Logger } from 'pino';
import { openApp, type App } from './app.js';
import type { Config } from './config/index.js';
import { openDatabase } from './db/open-database.js';
import { useNamedStatements } from './db/prepared.js';
import { assertSchemaCurrent, connectOrm, migrate } from './db/orm.js';
import { createGatewayPubSub } from './graphql/pubsub.js';
import { ListenClient } from './db/listen.client.js';
import { API_KEY_REVOKED_CHANNEL, ORDER_EVENTS_CHANNEL } from './modules/events/event.catalogue.js';
import { orderEventLoader, orderEventsChannel } from './modules/orders/order-update.stream.js';
import { buildGatewaySchema } from './graphql/schema.js';
import { buildServer, type HttpServer } from './http/server.js';
import { environmentRoutes } from './rest/route-table.js';
import { checkoutPageRoutes } from './checkout/checkout.page.js';
import { refundClaimPageRoutes } from './checkout/refund-claim.page.js';
import { dashboardPageRoutes } from './dashboard/dashboard.page.js';
import { startMetricsServer } from './http/metrics.route.js';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RpcOverrides } from './chains/networks.js';
import type { DevChains, SandboxChains } from './devchain/index.js';
import { NETWORKS } from './common/environment.js';
import type { Scheduler, SchedulerOptions } from './jobs/scheduler.js';
import type { WebhookRunner } from './modules/webhooks/webhook.runner.js';

export interface Gateway {
  app: App;
  /** Base URL of the HTTP server (api/all roles). */
  url?: string;
  /** Worker role with METRICS_PORT: base URL of its own `/metrics` listener. */
  metricsUrl?: string;
  http?: HttpServer;
  scheduler?: Scheduler;
  /** worker/all roles: this process's webhook delivery loop. */
  webhooks?: WebhookRunner;
  /** api/all roles: the LISTEN connection feeding this process's GraphQL PubSub and API-key cache. */
  listen?: ListenClient;
  /** Local EVM chains the worker was given (tests). */
  devChains?: DevChains;
  /** The four local sandbox chains the worker runs (DEV_CHAINS). */
  sandboxChains?: SandboxChains;
  databaseUrl: string;
  stop(): Promise<void>;
}

export interface StartOptions {
  scheduler?: SchedulerOptions;
  /** RPC URLs that replace config for some (environment, network) pairs (tests, local chains). */
  rpcOverrides?: RpcOverrides;
  /** Local chains started by the caller; when absent and DEV_CHAINS is on, the worker starts its own. */
  devChains?: DevChains;
}

/**
 * Boots one process in its role. Order: database (embedded if needed) → migrations → services →
 * HTTP (api) and jobs (worker). `stop()` undoes it in reverse: HTTP and websockets drain first, then
 * jobs release their locks, then the database closes.
 */
export async function startGateway(config: Config, log: Logger, opts: StartOptions = {}): Promise<Gateway> {
  const cleanups: (() => Promise<void>)[] = [];
  const stop = async () => {
    for (const fn of cleanups.reverse()) {
      try {
        await fn();
      } catch (err) {
        log.error({ err }, 'shutdown step failed');
      }
    }
    cleanups.length = 0;
  };
  // The local chains boot in parallel with the database, migrations and HTTP (most of a cold start).
  const sandboxStarting =
    config.ROLE !== 'api' && config.DEV_CHAINS && !opts.devChains
      ? import('./devchain/index.js').then((d) => d.startSandboxChains({ cacheDir: join(config.DATA_DIR, 'solc'), blockTime: 1 }))
      : undefined;
  sandboxStarting?.catch(() => undefined); // awaited below; a failure before then must not be unhandled
  // First in, so last out: the chains stop after the watchers and the database are done with them.
  if (sandboxStarting) cleanups.push(async () => (await sandboxStarting.catch(() => undefined))?.stop());
  try {
    const db = await openDatabase(config, log);
    cleanups.push(() => db.release());
    const databaseUrl = db.url;
    // LISTEN, the job store (its lock owners' presence) and the migration lock keep session state: with
    // DATABASE_URL through PgBouncer in transaction mode they go to DATABASE_SESSION_URL (docs/deploy.md).
    const sessionUrl = (db.embedded ? undefined : config.DATABASE_SESSION_URL) ?? databaseUrl;
    useNamedStatements(config.DATABASE_PREPARED_STATEMENTS);
    const orm = await connectOrm(databaseUrl, config.DATABASE_POOL_MAX);
    cleanups.push(() => orm.close(true));
    if (config.MIGRATE_ON_START) {
      const applied = await migrate(orm, sessionUrl);
      if (applied.length) log.info({ applied }, 'migrations applied');
    } else {
      await assertSchemaCurrent(orm); // migrations are a deploy step (`npm run migrate`): serve only the schema this code knows
    }

    const app = await openApp(config, orm, log);
    cleanups.push(() => app.exports.close());
    const gateway: Gateway = { app, databaseUrl, stop };
    // A worker alone has no HTTP server: its metrics get their own listener when METRICS_PORT is set.
    if (config.ROLE === 'worker' && config.METRICS_PORT !== undefined) {
      const metricsServer = await startMetricsServer(app, config.HOST, config.METRICS_PORT);
      cleanups.push(() => metricsServer.close());
      gateway.metricsUrl = metricsServer.url;
    }

    if (config.ROLE !== 'worker') {
      // Order status changes from every process (NOTIFY on commit) → this process's subscriptions.
      const pubSub = createGatewayPubSub();
      // The same LISTEN connection carries API-key rotations, so this process may cache key lookups.
      const listen = new ListenClient({ connectionString: sessionUrl, log, name: 'cpg-api-events' })
        .on(ORDER_EVENTS_CHANNEL, orderEventsChannel(pubSub, log, orderEventLoader(orm)))
        .on(API_KEY_REVOKED_CHANNEL, app.apiKeys.revocationChannel());
      cleanups.push(() => listen.close());
      await listen.start();
      app.apiKeys.enableCache({ ttlMs: config.API_KEY_CACHE_TTL_MS, revocationsLive: () => listen.listening });
      const keyUsage = app.apiKeys.startUsageFlush(() => app.orm.em.fork(), config.API_KEY_USAGE_FLUSH_MS, log);
      cleanups.push(() => keyUsage.stop());
      gateway.listen = listen;
      const schema = await buildGatewaySchema(pubSub);
      let draining = false;
      const http = await buildServer(app, {
        draining: () => draining,
        schema,
        envRoutes: environmentRoutes(app),
        pages: [...checkoutPageRoutes(app), ...refundClaimPageRoutes(app), ...dashboardPageRoutes()],
        // all role: ready once the local chains and their watchers run, not merely once HTTP answers
        readiness: config.ROLE === 'all' ? () => ({ watchers: gateway.scheduler !== undefined }) : undefined,
      });
      await http.fastify.listen({ host: config.HOST, port: config.PORT });
      cleanups.push(async () => {
        // Out of the balancer first: /readyz fails while requests are still served, then the port closes
        // and in-flight requests drain. A balancer that has not noticed retries the refused connection.
        draining = true;
        if (config.SHUTDOWN_DRAIN_MS > 0) {
          log.info({ ms: config.SHUTDOWN_DRAIN_MS }, 'draining: /readyz answers 503 before the port closes');
          await new Promise((r) => setTimeout(r, config.SHUTDOWN_DRAIN_MS));
        }
        await http.close();
      });
      const addr = http.fastify.server.address();
      const port = typeof addr === 'object' && addr ? addr.port : config.PORT;
      gateway.http = http;
      gateway.url = `http://${config.HOST === '0.0.0.0' ? '127.0.0.1' : config.HOST}:${port}`;
      if (!config.publicBaseUrlExplicit) config.PUBLIC_BASE_URL = gateway.url;
    }
    if (config.ROLE !== 'api') {
      // The worker's modules load here, not at the top: the chain adapters, sweeps and local chains bring
      // the chains' client libraries (ethers providers, TronWeb, web3.js connections), and the scheduler
      // its job store; an API process (ROLE=api) runs none of them and does not carry them.
      const [
        { watchedNetworks },
        { DEV_SWEEP_CONTRACTS, fundSandboxGasTanks, SANDBOX_TOKENS },
        { expireOrdersJob },
        { pruneSessionsJob },
        { reconcileJob },
        { watchChainJobs },
        { sweepJobs },
        { refundJobs },
        { startScheduler },
        { startWebhookDelivery, webhookJobs },
        { customerMailJob },
        { compactOrderStatsJob },
      ] = await Promise.all([
        import('./chains/networks.js'),
        import('./devchain/index.js'),
        import('./jobs/expire-orders.job.js'),
        import('./jobs/prune-sessions.job.js'),
        import('./jobs/reconcile.job.js'),
        import('./jobs/watch-chain.job.js'),
        import('./jobs/sweep.job.js'),
        import('./jobs/refund.job.js'),
        import('./jobs/scheduler.js'),
        import('./jobs/webhook-deliver.job.js'),
        import('./jobs/customer-mail.job.js'),
        import('./jobs/compact-order-stats.job.js'),
      ]);
      const devChains = opts.devChains;
      let sandbox: SandboxChains | undefined;
      if (sandboxStarting) {
        // The sandbox works offline: four local chains, a block (slot) every second or less.
        sandbox = await sandboxStarting;
        const chains = sandbox;
        // Where the CLI's `dev pay` finds them (like embedded-pg.json for the database).
        const stateFile = join(config.DATA_DIR, 'devchains.json');
        writeFileSync(stateFile, JSON.stringify(chains.rpcUrls));
        cleanups.push(async () => rmSync(stateFile, { force: true }));
        const em = app.orm.em.fork();
        for (const network of NETWORKS) {
          for (const t of SANDBOX_TOKENS[network]) await app.tokens.upsert(em, { environment: 'sandbox', network, ...t });
        }
        // The sandbox gas tanks pay sweeps' fees: funded here like the EVM dev tank is by its chain start.
        await fundSandboxGasTanks(chains, { TRON: app.gasTanks.address('sandbox', 'TRON'), SOLANA: app.gasTanks.address('sandbox', 'SOLANA') });
        log.info({ ...chains.rpcUrls, ms: Math.round(chains.timings.totalMs) }, 'local sandbox chains started (ETHEREUM, BINANCE, TRON, SOLANA)');
        gateway.sandboxChains = sandbox;
      }
      const overrides: RpcOverrides = {
        ...(devChains && { 'sandbox:ETHEREUM': [devChains.ETHEREUM.rpcUrl], 'sandbox:BINANCE': [devChains.BINANCE.rpcUrl] }),
        ...(sandbox && Object.fromEntries(NETWORKS.map((n) => [`sandbox:${n}`, [sandbox.rpcUrls[n]]]))),
        ...opts.rpcOverrides,
      };
      // URLs given at start are chains this process reaches directly: local ones are public as they are.
      for (const [key, urls] of Object.entries(overrides)) {
        const [environment, network] = key.split(':') as [Environment, (typeof NETWORKS)[number]];
        if (urls?.length) app.networks.markWatched(environment, network, { rpcUrls: urls, local: environment === 'sandbox' });
      }
      gateway.devChains = devChains;
      const networks = watchedNetworks(config, overrides, {
        onRpcFailure: (f) => {
          app.metrics.rpcErrors.inc({ environment: f.environment, network: f.network, provider: f.provider, reason: f.reason });
          // the first failure of a streak demotes the provider: said once, not per attempt
          if (f.consecutiveFailures === 1)
            log.warn(
              { environment: f.environment, network: f.network, provider: f.provider, reason: f.reason },
              'RPC provider demoted; retried after a backoff',
            );
        },
        // a provider on another chain: alarmed (metric, error log, `/readyz` details), never used
        onWrongChain: (r) => {
          app.metrics.providersRefused.inc({ environment: r.environment, network: r.network, provider: r.provider });
          log.error(
            { environment: r.environment, network: r.network, provider: r.provider, reason: r.message },
            'RPC provider refused: it serves another chain',
          );
        },
        onRpcCall: (c) => app.metrics.rpcCalls.inc({ environment: c.environment, network: c.network, provider: c.provider, method: c.method }),
        // the sandbox's local EVM chains carry the dev sweep contracts (config may name others)
        localSweepContracts: DEV_SWEEP_CONTRACTS,
      });
      log.info({ networks: networks.map((n) => `${n.environment}:${n.network}`) }, 'watching networks');
      for (const n of networks)
        app.metrics.trackProviders({ environment: n.environment, network: n.network, snapshot: () => n.adapter.providerHealth.snapshot() });
      const jobs = [
        pruneSessionsJob,
        expireOrdersJob(config.EXPIRY_INTERVAL_S),
        compactOrderStatsJob(10),
        ...watchChainJobs(networks, config.WATCH_LOCK_MS),
        ...sweepJobs(networks, config.WATCH_LOCK_MS),
        ...(config.REFUND_POLL_MS > 0 ? refundJobs(networks, config.WATCH_LOCK_MS) : []),
        ...webhookJobs(config),
        ...(config.RECONCILE_INTERVAL_S > 0 ? [reconcileJob(networks, config.RECONCILE_INTERVAL_S)] : []),
      ];
      const mailJob = customerMailJob(app);
      if (mailJob) jobs.push(mailJob);
      const scheduler = await startScheduler(app, sessionUrl, jobs, opts.scheduler);
      cleanups.push(() => scheduler.stop());
      gateway.scheduler = scheduler;
      // Webhook delivery loop (stops first: in-flight attempts finish and are recorded).
      const webhookRunner = startWebhookDelivery(app, sessionUrl);
      await webhookRunner.start();
      cleanups.push(() => webhookRunner.stop());
      gateway.webhooks = webhookRunner;
    }
    return gateway;
  } catch (err) {
    await stop();
    throw err;
  }
}
