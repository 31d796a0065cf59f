import { smtpTransport } from './modules/customer-mail/customer-mail.service.js';
import { TeamService } from './modules/teams/team.service.js';
import { AuditService } from './modules/audit/audit.service.js';
import { ENVIRONMENTS, NETWORKS } from './common/environment.js';
import type { Logger } from 'pino';
import type { Config } from './config/index.js';
import type { SecretBox } from './common/crypto.js';
import { openSecretBox } from './common/data-keys.js';
import { keyEncryptionKeys } from './common/key-encryption.js';
import type { Orm } from './db/orm.js';
import { DepositService } from './modules/deposits/deposit.service.js';
import { HdWalletService } from './modules/deposits/hd-wallet.service.js';
import { ApiKeyService } from './modules/merchants/api-key.service.js';
import { AuthService } from './modules/merchants/auth.service.js';
import { SecondFactorService } from './modules/merchants/second-factor.service.js';
import { MerchantService } from './modules/merchants/merchant.service.js';
import { CheckoutViewService } from './modules/checkout/checkout-view.service.js';
import { CheckoutKeyService } from './modules/orders/checkout-key.service.js';
import { OrderStatusService } from './modules/orders/order-status.service.js';
import { OrderService } from './modules/orders/order.service.js';
import { OrderStatsService } from './modules/orders/order-stats.service.js';
import { PaymentLinkService } from './modules/payment-links/payment-link.service.js';
import { PaymentService } from './modules/payments/payment.service.js';
import { SettlementService } from './modules/payments/settlement.service.js';
import { UnattributedReceiptService } from './modules/payments/unattributed-receipt.service.js';
import { ReconciliationService } from './modules/reconciliation/reconciliation.service.js';
import { CoinGeckoRateProvider } from './modules/quotes/providers/coingecko.rate-provider.js';
import { IndodaxRateProvider } from './modules/quotes/providers/indodax.rate-provider.js';
import { QuoteService } from './modules/quotes/quote.service.js';
import { RateProviderRegistry, RateService } from './modules/quotes/rate-provider.js';
import { TokenService } from './modules/tokens/token.service.js';
import { MerchantEventWriter } from './modules/events/merchant-event.writer.js';
import { SettlementWalletService } from './modules/settlement-wallets/settlement-wallet.service.js';
import { createWebhookServices, type WebhookServices } from './modules/webhooks/webhook.wiring.js';
import { RateLimits } from './modules/limits/rate-limit.service.js';
import { NetworkCatalog } from './modules/networks/network-catalog.service.js';
import { FaucetService } from './modules/faucet/faucet.service.js';
import { CsvExportService } from './modules/analytics/csv-export.service.js';
import { GatewayMetrics } from './modules/metrics/gateway-metrics.js';
import { GasTankService } from './modules/sweeps/gas-tank.service.js';
import { SweepService } from './modules/sweeps/sweep.service.js';
import { SweepStatusService } from './modules/sweeps/sweep-status.service.js';
import { DEV_GAS_TANK_EVM_ADDRESS, DEV_GAS_TANK_EVM_KEY, SANDBOX_FAUCET_SECP256K1_KEY, SANDBOX_FAUCET_SOLANA_SEED } from './devchain/dev-keys.js';
import { sweepEventsHook } from './modules/sweeps/sweep-events.js';
import { adapterLookup } from './chains/networks.js';
import { RefundService } from './modules/refunds/refund.service.js';
import { RefundStatusService } from './modules/refunds/refund-status.service.js';
import { refundEventsHook } from './modules/refunds/refund-events.js';
import { sampleDatabase } from './modules/metrics/metrics.sample.js';

/** The service graph, built once per process and shared by every transport and job. */
export interface App {
  config: Config;
  orm: Orm;
  log: Logger;
  box: SecretBox;
  rateLimits: RateLimits;
  apiKeys: ApiKeyService;
  auth: AuthService;
  secondFactors: SecondFactorService;
  merchants: MerchantService;
  checkoutKeys: CheckoutKeyService;
  /** What the hosted checkout page and the customer's mails show of an order (read model only). */
  checkoutView: CheckoutViewService;
  tokens: TokenService;
  orders: OrderService;
  /** Order aggregates for dashboards (orders table only, computed in SQL). */
  orderStats: OrderStatsService;
  /** The only writer of `orders.status` (transition table + outbox row + NOTIFY, in the caller's transaction). */
  orderStatus: OrderStatusService;
  rates: RateService;
  quotes: QuoteService;
  wallets: HdWalletService;
  deposits: DepositService;
  paymentLinks: PaymentLinkService;
  payments: PaymentService;
  settlement: SettlementService;
  /** Receipts at deposit addresses that never count (late, wrong token, wrong network). */
  receipts: UnattributedReceiptService;
  /** Deposit balances on chain vs the ledger, per network (job, CLI, operators' query). */
  reconciliation: ReconciliationService;
  /** The only writer of `merchant_events` (settlement_wallet.changed, sweep.*; in the caller's transaction, queued for webhooks). */
  merchantEvents: MerchantEventWriter;
  /** Settlement addresses per environment and network (owner + password, hold, webhook); `current()` for the sweep engine. */
  settlementWallets: SettlementWalletService;
  /** Notification URLs, outbox → deliveries, delivery claims/records, the delivery log. */
  webhooks: WebhookServices;
  /** Watched networks per environment (what `/networks` shows and which tokens are offered). */
  networks: NetworkCatalog;
  /** Sandbox faucet. */
  faucet: FaucetService;
  /** The audit trail: listing, CSV export, chain verification (recording is `recordAudit`, in each service's transaction). */
  audit: AuditService;
  /** Streamed CSV exports of orders and payments (own small connection pool). */
  exports: CsvExportService;
  /** This process's Prometheus registry (served at `/metrics`). */
  metrics: GatewayMetrics;
  /** The only writer of `sweeps.status`. */
  sweepStatus: SweepStatusService;
  /** Gas tanks per environment and network (addresses, signing keys, low state). */
  gasTanks: GasTankService;
  /** The merchant-facing sweep API: sweep now, balances, history, schedule. */
  sweeps: SweepService;
  /** A merchant's team: members, roles, email invites (docs/teams.md). */
  teams: TeamService;
  /** The only writer of `refunds.status` (refund.* webhooks in the move's transaction). */
  refundStatus: RefundStatusService;
  /** Refunds: create, claim link, approve, cancel, list, settings, refund wallets (docs/refunds.md). */
  refunds: RefundService;
}

export function createRateService(config: Config, log: Logger): RateService {
  const registry = new RateProviderRegistry([
    new IndodaxRateProvider({ baseUrl: config.RATE_INDODAX_URL }),
    new CoinGeckoRateProvider({ baseUrl: config.RATE_COINGECKO_URL }),
  ]);
  const ids = config.RATE_SOURCES === 'none' ? [] : config.RATE_SOURCES.split(',');
  return new RateService({
    providers: registry.resolve(ids),
    fallbackRates: { USDT: config.FALLBACK_RATE_USDT_IDR, USDC: config.FALLBACK_RATE_USDC_IDR },
    cacheTtlMs: config.RATE_CACHE_TTL_MS,
    requestTimeoutMs: config.RATE_TIMEOUT_MS,
    maxChangePercent: config.RATE_MAX_CHANGE_PERCENT,
    onProviderFailure: (f) => log.warn({ provider: f.providerId, symbol: f.symbol, err: String(f.error) }, 'rate source failed'),
  });
}

/** The app with its key ring read from the database (the schema must be current): what the processes run. */
export async function openApp(config: Config, orm: Orm, log: Logger): Promise<App> {
  return createApp(config, orm, log, await openSecretBox(orm.em.fork(), keyEncryptionKeys(config)));
}

/** `box`: the key ring of secrets at rest, from `openSecretBox` (src/common/data-keys.ts) once the schema is current. */
export function createApp(config: Config, orm: Orm, log: Logger, box: SecretBox): App {
  const metrics = new GatewayMetrics({ sample: () => sampleDatabase(orm.em.fork()), processMetrics: config.NODE_ENV !== 'test' });
  const apiKeys = new ApiKeyService(box, config.API_KEY_PREFIX);
  const rateLimits = new RateLimits(config, orm.em.getConnection().getKnex(), (hits) => {
    metrics.rateLimitBatches.inc();
    metrics.rateLimitHits.inc(hits);
  });
  const throttleAccount = async (account: string) => void (await rateLimits.consume('account', account));
  const secondFactors = new SecondFactorService({
    box,
    // Read per use: a test server's PUBLIC_BASE_URL gets its port after listen.
    relyingParty: () => {
      const u = new URL(config.PUBLIC_BASE_URL);
      return { id: u.hostname, origin: u.origin, name: 'Crypto Payment Gateway' };
    },
    challengeTtlS: 300,
    maxAttempts: 5,
    throttleAccount,
  });
  const auth = new AuthService({
    secondFactors,
    jwtSecret: config.JWT_SECRET,
    accessTtlS: config.ACCESS_TOKEN_TTL_S,
    refreshTtlS: config.REFRESH_TOKEN_TTL_S,
    throttleAccount,
    reauthWindowS: config.REAUTH_WINDOW_S,
  });
  const merchants = new MerchantService(apiKeys, { httpsLogos: config.NODE_ENV === 'production' });
  const checkoutKeys = new CheckoutKeyService();
  const networks = new NetworkCatalog(config);
  const tokens = new TokenService(config.DEV_CHAINS, (e, n) => networks.isOffered(e, n));
  let statementsEm: ReturnType<Orm['em']['fork']> | undefined;
  const orders = new OrderService(checkoutKeys, {
    publicBaseUrl: () => config.PUBLIC_BASE_URL,
    defaultTtlS: config.ORDER_TTL_S,
    idempotencyTtlS: config.IDEMPOTENCY_KEY_TTL_S,
    minIdr: config.ORDER_MIN_IDR,
    maxIdr: config.ORDER_MAX_IDR,
    groupCommit: config.ORDER_GROUP_COMMIT
      ? {
          windowMs: config.ORDER_GROUP_COMMIT_WINDOW_MS,
          maxBatch: config.ORDER_GROUP_COMMIT_MAX,
          maxInFlight: Math.min(config.ORDER_GROUP_COMMIT_CONNECTIONS, config.DATABASE_POOL_MAX),
        }
      : undefined,
    onCreated: (o) => metrics.ordersCreated.inc({ environment: o.environment, source: o.source }),
    onBatch: (n) => {
      metrics.orderBatches.inc();
      metrics.orderBatchRows.inc(n);
    },
    statements: () => (statementsEm ??= orm.em.fork()),
    anyNetworkOffered: (environment) => NETWORKS.some((n) => networks.isOffered(environment, n)),
  });
  const orderStatus = new OrderStatusService((t) => {
    metrics.orderTransitions.inc({ environment: t.environment, from: t.from, to: t.to });
    if (t.to === 'Success') metrics.ordersPaid.inc({ environment: t.environment });
  });
  const rates = createRateService(config, log);
  const quotes = new QuoteService(orders, tokens, rates);
  const wallets = new HdWalletService(box);
  const deposits = new DepositService(orders, tokens, quotes, wallets, config.DEV_CHAINS);
  const paymentLinks = new PaymentLinkService(
    orders,
    {
      publicBaseUrl: () => config.PUBLIC_BASE_URL,
      minIdr: config.ORDER_MIN_IDR,
      maxIdr: config.ORDER_MAX_IDR,
      unpaidPerClient: config.PAYMENT_LINK_UNPAID_PER_CLIENT,
    },
    rateLimits,
  );
  const payments = new PaymentService();
  const settlement = new SettlementService(orderStatus, {
    lateWindowS: config.LATE_PAYMENT_WINDOW_S,
    // The deep-reorg alarm: next to the payment.reorged event and webhook, a log line at error and a metric.
    onPaymentReorged: (a) => {
      metrics.paymentsReorged.inc({ environment: a.environment, network: a.network });
      log.error({ alarm: 'payment.reorged', ...a }, 'a confirmed payment was reorganised away (reorg deeper than the confirmation depth)');
    },
  });
  const receipts = new UnattributedReceiptService();
  const reconciliation = new ReconciliationService(
    tokens,
    log,
    config.RECONCILE_CONCURRENCY,
    config.LATE_PAYMENT_WINDOW_S + config.CLOSED_DEPOSIT_WATCH_S,
    (r) => {
      metrics.reconciliationMismatches.set({ environment: r.environment, network: r.network }, r.mismatches);
      metrics.reconciliationChecked.set({ environment: r.environment, network: r.network }, r.checked);
    },
  );
  const webhooks = createWebhookServices(config, apiKeys, box);
  const merchantEvents = new MerchantEventWriter();
  const settlementWallets = new SettlementWalletService({
    holdSeconds: { production: config.SETTLEMENT_HOLD_SECONDS_PRODUCTION, sandbox: config.SETTLEMENT_HOLD_SECONDS_SANDBOX },
    events: merchantEvents,
    throttleAccount: async (account) => void (await rateLimits.consume('account', account)),
    log,
  });
  // The local dev keys are the faucet's default only where they are funded: on the chains `npm start` runs.
  const faucet = new FaucetService(
    config,
    networks,
    tokens,
    config.DEV_CHAINS
      ? { secp256k1Evm: SANDBOX_FAUCET_SECP256K1_KEY, secp256k1Tron: SANDBOX_FAUCET_SECP256K1_KEY, solanaSeedHex: SANDBOX_FAUCET_SOLANA_SEED }
      : undefined,
  );
  const exports = new CsvExportService({
    // Its connections set session parameters (timeout, read-only) and are destroyed after each export:
    // a session of their own, never a transaction pool's server connection shared with others.
    databaseUrl: config.DATABASE_SESSION_URL ?? orm.config.get('clientUrl')!,
    maxConcurrent: config.EXPORT_MAX_CONCURRENT,
  });
  const sweepStatus = new SweepStatusService(sweepEventsHook(merchantEvents));
  const gasTanks = new GasTankService({
    mnemonics: { sandbox: config.GAS_TANK_MNEMONIC_SANDBOX, production: config.GAS_TANK_MNEMONIC_PRODUCTION },
    lowThreshold: (network) => config[`GAS_TANK_LOW_${network}`],
    log,
    // The local EVM chains' Sweeper contract obeys the dev tank key (src/devchain), funded at every start.
    fixed: config.DEV_CHAINS
      ? {
          'sandbox:ETHEREUM': { key: DEV_GAS_TANK_EVM_KEY, address: DEV_GAS_TANK_EVM_ADDRESS },
          'sandbox:BINANCE': { key: DEV_GAS_TANK_EVM_KEY, address: DEV_GAS_TANK_EVM_ADDRESS },
        }
      : undefined,
  });
  // Sweeps to a gas tank would pay the operator with the merchant's money: tanks are never settlement addresses.
  settlementWallets.reserveAddresses((network) => ENVIRONMENTS.flatMap((environment) => gasTanks.address(environment, network) ?? []));
  const sweeps = new SweepService({ throttleSweepNow: async (merchantId) => void (await rateLimits.consume('sweepNow', merchantId)) });
  const teams = new TeamService({
    inviteTtlS: config.TEAM_INVITE_TTL_S,
    inviteUrl: () => (config.TEAM_INVITE_URL ?? `${config.PUBLIC_BASE_URL}/dashboard/invite`).replace(/#.*$/, ''),
    transport: smtpTransport(config),
    from: config.SMTP_FROM,
    returnLinkWithoutMail: config.NODE_ENV !== 'production',
    throttleAccount: async (account) => void (await rateLimits.consume('account', account)),
    log,
  });
  const checkoutView = new CheckoutViewService({ checkoutKeys, tokens, networks, lateWindowS: config.LATE_PAYMENT_WINDOW_S, devChains: config.DEV_CHAINS });
  const refundStatus = new RefundStatusService(refundEventsHook(merchantEvents));
  const refunds = new RefundService({
    events: merchantEvents,
    status: refundStatus,
    wallets,
    publicBaseUrl: () => config.PUBLIC_BASE_URL,
    tankAddresses: (network) => ENVIRONMENTS.flatMap((environment) => gasTanks.address(environment, network) ?? []),
    adapter: adapterLookup(config, (environment, network) => networks.rpcUrls(environment, network)),
    activeTokens: (em, environment) => tokens.listActive(em, environment),
  });
  return {
    refundStatus,
    refunds,
    teams,
    sweepStatus,
    gasTanks,
    sweeps,
    config,
    orm,
    log,
    box,
    rateLimits,
    apiKeys,
    auth,
    secondFactors,
    merchants,
    checkoutKeys,
    checkoutView,
    tokens,
    orders,
    orderStats: new OrderStatsService(),
    orderStatus,
    rates,
    quotes,
    wallets,
    deposits,
    paymentLinks,
    payments,
    settlement,
    receipts,
    reconciliation,
    merchantEvents,
    settlementWallets,
    webhooks,
    networks,
    faucet,
    exports,
    metrics,
    audit: new AuditService(),
  };
}
