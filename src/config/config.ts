import { validateMnemonic } from '@scure/bip39';
import { wordlist } from '@scure/bip39/wordlists/english.js';
import { z } from 'zod';

/**
 * The only place that reads `process.env` (see docs/configuration.md). Every variable is declared
 * here once, with its default, whether it is a secret, and a description; `loadConfig` validates them
 * all at boot and fails naming each bad variable.
 */

const bool = z.enum(['true', 'false', '1', '0', 'yes', 'no']).transform((v) => v === 'true' || v === '1' || v === 'yes');
const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);
const url = z.url({ protocol: /^(postgres|postgresql|mongodb|mongodb\+srv|https?|wss?)$/ });
const csvUrls = z
  .string()
  .transform((s) =>
    s
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean),
  )
  .pipe(z.array(z.url({ protocol: /^(https?|wss?)$/ })).min(1));
/** 32-byte key as 64 hex chars or base64 of 32 bytes. */
const key32 = z.string().transform((s, ctx) => {
  const buf = /^[0-9a-fA-F]{64}$/.test(s) ? Buffer.from(s, 'hex') : Buffer.from(s, 'base64');
  if (buf.length !== 32) {
    ctx.addIssue({ code: 'custom', message: 'must be 32 bytes as 64 hex characters or base64' });
    return z.NEVER;
  }
  return buf;
});
/** Keys as key32, comma-separated (MASTER_KEY_PREVIOUS). */
const key32List = z
  .string()
  .transform((s) =>
    s
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean),
  )
  .pipe(z.array(key32).max(4, 'at most 4 previous keys'));
const mnemonic = z
  .string()
  .transform((s) => s.trim().split(/\s+/).join(' '))
  .refine((s) => validateMnemonic(s, wordlist), 'must be a valid BIP-39 English mnemonic');
const baseUnits = z
  .string()
  .regex(/^\d{1,78}$/, 'must be an integer amount of base units')
  .transform((s) => BigInt(s));
const DEFAULT_NATIVE_PRICE: Record<string, string> = { ETHEREUM: '3000', BINANCE: '600', TRON: '0.25', SOLANA: '150' };
const DEFAULT_TANK_LOW: Record<string, string> = { ETHEREUM: '50000000000000000', BINANCE: '50000000000000000', TRON: '200000000', SOLANA: '50000000' };
const NATIVE_UNIT: Record<string, string> = { ETHEREUM: 'wei', BINANCE: 'wei', TRON: 'sun', SOLANA: 'lamports' };
const decimalString = z.string().regex(/^\d+(\.\d+)?$/, 'must be a positive decimal number');

interface VarSpec {
  schema: z.ZodType;
  default?: string;
  secret?: boolean;
  description: string;
}

const ENV_KEYS = ['SANDBOX', 'PRODUCTION'] as const;
const NETWORK_KEYS = ['ETHEREUM', 'BINANCE', 'TRON', 'SOLANA'] as const;
type ChainVarName = `${(typeof ENV_KEYS)[number]}_${(typeof NETWORK_KEYS)[number]}_${'RPC_URLS' | 'CONFIRMATIONS' | 'PUBLIC_RPC_URL'}`;
const rpcVar = (env: string, net: string) => ({
  schema: csvUrls.optional(),
  secret: true,
  description: `Comma-separated RPC URLs for ${net} in ${env.toLowerCase()} (failover in order; may carry provider keys). Unset → not watched${env === 'SANDBOX' && (net === 'ETHEREUM' || net === 'BINANCE') ? ' (the local dev chain when DEV_CHAINS is on)' : ''}`,
});
const DEFAULT_CONFIRMATIONS: Record<string, string> = { ETHEREUM: '12', BINANCE: '15', TRON: '19', SOLANA: '32' };
const confVar = (env: string, net: string) => ({
  schema: int(1, 1000),
  default: env === 'SANDBOX' && (net === 'ETHEREUM' || net === 'BINANCE') ? '3' : DEFAULT_CONFIRMATIONS[net]!,
  description: `Blocks deep a ${net} payment must be in ${env.toLowerCase()} before it counts${net === 'TRON' ? ' (TRON also waits for solidification)' : net === 'SOLANA' ? ' (SOLANA also waits for finalization)' : ''}`,
});
const publicRpcVar = (env: string, net: string) => ({
  schema: z.url({ protocol: /^https?$/ }).optional(),
  description: `RPC URL for ${net} in ${env.toLowerCase()} that outside wallets may use, shown by \`GET /api/v2/${env === 'SANDBOX' ? 'testnet' : 'mainnet'}/networks\` (never the keyed \`_RPC_URLS\`)${env === 'SANDBOX' ? '; default: the local chain’s URL when DEV_CHAINS is on' : ''}`,
});
type ChainVarSpec = ReturnType<typeof rpcVar> | ReturnType<typeof confVar> | ReturnType<typeof publicRpcVar>;
/** `<ENV>_<NETWORK>_RPC_URLS` / `_CONFIRMATIONS` / `_PUBLIC_RPC_URL` for every environment and network. */
function chainVars(): Record<ChainVarName, ChainVarSpec> {
  const out = {} as Record<string, ChainVarSpec>;
  for (const env of ENV_KEYS) {
    for (const net of NETWORK_KEYS) {
      out[`${env}_${net}_RPC_URLS`] = rpcVar(env, net);
      out[`${env}_${net}_CONFIRMATIONS`] = confVar(env, net);
      out[`${env}_${net}_PUBLIC_RPC_URL`] = publicRpcVar(env, net);
    }
  }
  return out as Record<ChainVarName, ChainVarSpec>;
}

const genesisVar = (net: string) => ({
  schema: z
    .string()
    .regex(
      net === 'SOLANA' ? /^[1-9A-HJ-NP-Za-km-z]{32,44}$/ : net === 'TRON' ? /^[0-9a-fA-F]{64}$/ : /^0x[0-9a-fA-F]{64}$/,
      `must be the ${net === 'SOLANA' ? 'base58 genesis hash' : net === 'TRON' ? 'block 0 blockID (64 hex digits)' : 'block 0 hash (0x + 64 hex digits)'}`,
    )
    .optional(),
  description: `The genesis hash of the chain the sandbox watches on ${net}: a provider serving another one is refused by name, whichever answers first (docs/watchers.md "Chain identity"). Unset → the chain most providers agree on (production always expects the mainnet's)`,
});
/** `SANDBOX_<NETWORK>_GENESIS` for every network. */
function genesisVars(): Record<`SANDBOX_${(typeof NETWORK_KEYS)[number]}_GENESIS`, ReturnType<typeof genesisVar>> {
  return Object.fromEntries(NETWORK_KEYS.map((net) => [`SANDBOX_${net}_GENESIS`, genesisVar(net)])) as Record<
    `SANDBOX_${(typeof NETWORK_KEYS)[number]}_GENESIS`,
    ReturnType<typeof genesisVar>
  >;
}

const evmAddress = z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'must be a 0x-prefixed 20-byte hex address');
type EvmSweepVarName = `${(typeof ENV_KEYS)[number]}_${'ETHEREUM' | 'BINANCE'}_${'DISPERSE_ADDRESS' | 'SWEEPER_ADDRESS'}`;
const wsUrls = z
  .string()
  .transform((s) =>
    s
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean),
  )
  .pipe(z.array(z.url({ protocol: /^wss?$/ })).min(1));
/** The networks whose providers push new heads over WebSocket (TRON's HTTP API has no push). */
export const PUSH_NETWORKS = ['ETHEREUM', 'BINANCE', 'SOLANA'] as const;
type PushWsVarName = `${(typeof ENV_KEYS)[number]}_${(typeof PUSH_NETWORKS)[number]}_WS_URLS`;
/**
 * `<ENV>_<ETHEREUM|BINANCE|SOLANA>_WS_URLS`: the providers' WebSocket endpoints for push
 * (EVM `eth_subscribe("newHeads")`, SOLANA `slotSubscribe`).
 */
function pushWsVars(): Record<PushWsVarName, VarSpec> {
  const out = {} as Record<string, VarSpec>;
  for (const env of ENV_KEYS) {
    for (const net of PUSH_NETWORKS) {
      const what = net === 'SOLANA' ? 'slots (`slotSubscribe`)' : 'new heads (`eth_subscribe("newHeads")`)';
      const local =
        net === 'SOLANA' ? 'the local chain’s WebSocket, its RPC port + 1, when DEV_CHAINS is on' : 'the local dev chain’s WebSocket when DEV_CHAINS is on';
      out[`${env}_${net}_WS_URLS`] = {
        schema: wsUrls.optional(),
        secret: true,
        description: `Comma-separated WebSocket URLs (ws:// or wss://) of the ${net} providers in ${env.toLowerCase()}: the watcher subscribes to ${what} there and polls the moment one is announced (polling stays the fallback; may carry provider keys). Each URL belongs to the RPC URL at its position when both lists are as long, else to the one RPC URL on its host and port (${net === 'SOLANA' ? 'RPC port + 1' : 'the same port'}); ${net === 'SOLANA' ? 'it is used only while that RPC provider is verified on the watched chain, and a URL that belongs to none is not used' : 'its own chain is verified over the socket before it is subscribed, and it is not used while its RPC provider is refused'}. Unset → poll only${env === 'SANDBOX' ? ` (${local})` : ''}`,
      };
    }
  }
  return out as Record<PushWsVarName, VarSpec>;
}

/** The networks' block (slot) times in ms: production watchers poll at this cadence unless `WATCH_POLL_MS_<NETWORK>` says otherwise. */
export const BLOCK_TIME_MS: Record<(typeof NETWORK_KEYS)[number], number> = { ETHEREUM: 12_000, BINANCE: 750, TRON: 3_000, SOLANA: 400 };

const pollMsVar = int(20, 600_000).optional();

/** `<ENV>_<ETHEREUM|BINANCE>_DISPERSE_ADDRESS` / `_SWEEPER_ADDRESS`: the EVM sweep contracts (docs/sweeps-evm.md). */
function evmSweepVars(): Record<EvmSweepVarName, VarSpec> {
  const out = {} as Record<string, VarSpec>;
  for (const env of ENV_KEYS) {
    for (const net of ['ETHEREUM', 'BINANCE'] as const) {
      const local = env === 'SANDBOX' ? '; default: the local chain’s when DEV_CHAINS is on' : '';
      out[`${env}_${net}_DISPERSE_ADDRESS`] = {
        schema: evmAddress.optional(),
        description: `Disperse contract funding many ${net} deposits with gas in one transaction in ${env.toLowerCase()} (\`npm run cli -- gas-tank deploy-disperse\`); unset → one top-up transaction per deposit${local}`,
      };
      out[`${env}_${net}_SWEEPER_ADDRESS`] = {
        schema: evmAddress.optional(),
        description: `EIP-7702 Sweeper contract of the ${net} gas tank in ${env.toLowerCase()} (\`npm run cli -- gas-tank deploy-sweeper\`); set → deposits are swept in tank-paid batches without top-ups (the chain must support EIP-7702); unset → top-up then transfer${local}`,
      };
    }
  }
  return out as Record<EvmSweepVarName, VarSpec>;
}

/** Declaration order is the order of the table in docs/configuration.md. */
export const CONFIG_VARS = {
  NODE_ENV: {
    schema: z.enum(['development', 'test', 'production']),
    default: 'development',
    description: '`production` refuses generated secrets and an embedded database',
  },
  ROLE: { schema: z.enum(['api', 'worker', 'all']), default: 'all', description: 'Process role: `api` (HTTP), `worker` (jobs), `all` (both)' },
  HOST: { schema: z.string().min(1), default: '127.0.0.1', description: 'Interface the HTTP server binds to' },
  PORT: { schema: int(0, 65535), default: '3000', description: 'HTTP port (GraphQL, graphql-ws, REST on one port)' },
  PUBLIC_BASE_URL: {
    schema: z.url({ protocol: /^https?$/ }).optional(),
    description: 'Public address used in checkout and payment-link URLs (default `http://HOST:PORT`)',
  },
  LOG_LEVEL: { schema: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']), default: 'info', description: 'pino log level' },
  V8_ALLOCATION_SITE_PRETENURING: {
    schema: bool,
    default: 'false',
    description:
      "V8's allocation-site pretenuring. Off by default (main.ts turns it off at boot): under request load it moved node's per-request HTTP objects straight into old space — a mark-compact every ≈ 9 s and scavenges 3–4× longer (docs/operations.md). `true` restores V8's default",
  },
  DATA_DIR: {
    schema: z.string().min(1),
    default: '.data',
    description: 'Folder for the embedded database, development secrets and dev-chain caches (git-ignored)',
  },
  DATABASE_URL: {
    schema: url.optional(),
    secret: true,
    description: 'PostgreSQL URL; unset → an embedded PostgreSQL under `DATA_DIR` (not allowed in production)',
  },
  DATABASE_POOL_MAX: { schema: int(1, 500), default: '20', description: 'PostgreSQL connection pool size per process' },
  DATABASE_SESSION_URL: {
    schema: url.optional(),
    secret: true,
    description:
      "PostgreSQL URL for the connections that need a session of their own (LISTEN, the job store and its lock owners' presence, the migration lock): a direct connection or a PgBouncer pool in `session` mode, when `DATABASE_URL` goes through PgBouncer in `transaction` mode (docs/deploy.md); unset → `DATABASE_URL`",
  },
  MIGRATE_ON_START: {
    schema: bool,
    default: 'true',
    description:
      'Apply pending migrations when the process starts. `false` (recommended for clusters): run `npm run migrate` (or `cli.js migrate`) once per deploy, and every process refuses to start on a schema older or newer than its code knows',
  },
  DATABASE_PREPARED_STATEMENTS: {
    schema: bool,
    default: 'true',
    description:
      'Prepare the hottest statements (API-key lookup, order insert; recording, confirming and settling the payments of a block) by name on each pooled connection. Set `false` when `DATABASE_URL` goes through PgBouncer in `transaction` mode before 1.21 (or without `max_prepared_statements`): a statement prepared on one server connection does not exist on the next',
  },
  SHUTDOWN_DRAIN_MS: {
    schema: int(0, 120_000),
    default: '0',
    description:
      "API and all roles: on SIGTERM/SIGINT `/readyz` answers 503 (`shutting_down`) for this long while requests are still served, and only then does the port close; set it above the load balancer's health-check interval × fall count so the balancer takes the process out before it stops accepting (docs/deploy.md). 0 → close at once",
  },
  ANALYTICS_DB_ROLE: {
    schema: z.string().regex(/^(?!pg_)[a-z_][a-z0-9_]{0,62}$/, 'must be a lower-case PostgreSQL identifier not starting with pg_'),
    default: 'cpg_analyst',
    description:
      'Read-only PostgreSQL role for analysts, created or updated by `npm run cli -- analytics:role`: it may read the `analytics` views only (docs/analytics.md)',
  },
  ANALYTICS_DB_PASSWORD: {
    schema: z.string().min(12).max(200).optional(),
    secret: true,
    description: 'Password of `ANALYTICS_DB_ROLE` (≥ 12 characters); unset → the role is created NOLOGIN',
  },
  EXPORT_MAX_CONCURRENT: {
    schema: int(1, 100),
    default: '2',
    description:
      'CSV exports streaming at once per API process, each on its own database connection (outside the main pool); one per merchant; more are refused with `RATE_LIMITED`',
  },
  METRICS_TOKEN: {
    schema: z.string().min(16).max(200).optional(),
    secret: true,
    description:
      'Bearer token for `/metrics` (≥ 16 characters). Set → required in every environment; unset → `/metrics` is open in development and test and refused in production',
  },
  METRICS_PORT: {
    schema: int(0, 65535).optional(),
    description:
      'Worker role: port of its own `/metrics` listener on `HOST` (api and all roles serve `/metrics` on `PORT`); unset → a worker exposes no metrics; 0 → any free port',
  },
  MONGODB_URL: { schema: url.optional(), secret: true, description: 'MongoDB URL for the Agenda job store; unset → Agenda on PostgreSQL' },
  MASTER_KEY: {
    schema: key32.optional(),
    secret: true,
    description:
      'The key-encryption key: 32 bytes (hex or base64) wrapping the data key that seals secrets at rest (AES-256-GCM; docs/security.md "Keys at rest"); generated into `DATA_DIR` in development. Or `MASTER_KEY_FILE`',
  },
  MASTER_KEY_FILE: {
    schema: z.string().min(1).optional(),
    description:
      'Instead of `MASTER_KEY`: a file holding it (64 hex characters or base64; a mounted secret), refused unless group and others have no access (mode 0600 or 0400)',
  },
  MASTER_KEY_PREVIOUS: {
    schema: key32List.optional(),
    secret: true,
    description:
      'During a MASTER_KEY rotation: the previous key(s), comma-separated, still accepted to unwrap the data key (and to open secrets sealed before envelope encryption) until `npm run cli -- secrets reencrypt` has re-wrapped and re-sealed them under MASTER_KEY (docs/security.md)',
  },
  JWT_SECRET: {
    schema: z.string().min(32).optional(),
    secret: true,
    description: 'HMAC key for dashboard access tokens (≥ 32 chars); generated into `DATA_DIR` in development',
  },
  ACCESS_TOKEN_TTL_S: { schema: int(60, 86400), default: '900', description: 'Dashboard access-token lifetime (seconds)' },
  REFRESH_TOKEN_TTL_S: { schema: int(300, 90 * 86400), default: '2592000', description: 'Dashboard refresh-token / session lifetime (seconds)' },
  API_KEY_PREFIX: { schema: z.string().regex(/^[a-z]{2,8}$/), default: 'cpg', description: 'Fixed prefix of merchant API keys (`<prefix>_<64 hex>`)' },
  API_KEY_CACHE_TTL_MS: {
    schema: int(0, 300_000),
    default: '10000',
    description:
      'API processes reuse an API-key lookup this long; rotations are broadcast (LISTEN/NOTIFY) and evict at once, and the cache is bypassed while that feed is down. 0 disables',
  },
  API_KEY_USAGE_FLUSH_MS: {
    schema: int(100, 300_000),
    default: '5000',
    description:
      'API processes write each API key’s last use (time and client address) in one statement this often, so the dashboard’s “last used” is at most this far behind',
  },
  TRUST_PROXY: { schema: bool, default: 'false', description: 'Trust `X-Forwarded-For` for client IPs (behind a load balancer)' },
  BODY_LIMIT_BYTES: { schema: int(1024, 10 * 1024 * 1024), default: '65536', description: 'Largest accepted request body' },
  RATE_LIMIT_STORE: {
    schema: z.enum(['postgres', 'memory']),
    default: 'postgres',
    description: '`postgres` holds limits across instances; `memory` only for a single process',
  },
  RATE_LIMIT_PUBLIC_PER_MIN: { schema: int(1, 1_000_000), default: '120', description: 'Requests per minute per IP on public routes' },
  RATE_LIMIT_AUTH_PER_MIN: {
    schema: int(1, 1_000_000),
    default: '30',
    description: 'Requests per minute per IP on `/api/v2/auth/*` (refresh, logout, GraphQL auth)',
  },
  RATE_LIMIT_LOGIN_PER_MIN: { schema: int(1, 1_000_000), default: '5', description: 'Login attempts per minute per IP (stricter)' },
  RATE_LIMIT_LOGIN_ACCOUNT_PER_MIN: {
    schema: int(1, 1_000_000),
    default: '10',
    description:
      'Login attempts per minute per dashboard account (email), from any number of IPs; on top of the per-IP limit, so spreading guesses over many addresses does not help',
  },
  RATE_LIMIT_MERCHANT_PER_MIN: { schema: int(1, 10_000_000), default: '3000', description: 'Requests per minute per merchant on transaction routes' },
  RATE_LIMIT_SWEEP_NOW_PER_MIN: {
    schema: int(1, 10_000),
    default: '6',
    description: '"Sweep now" requests per minute per merchant (REST and GraphQL, both environments); on top of the merchant quota',
  },
  RATE_LIMIT_GRAPHQL_PER_MIN: {
    schema: int(1, 1_000_000),
    default: '600',
    description: 'GraphQL operations per minute per IP: each HTTP request, graphql-ws connection and graphql-ws operation takes one',
  },
  RATE_LIMIT_CHECKOUT_KEY_PER_MIN: {
    schema: int(1, 1_000_000),
    default: '120',
    description: 'Requests per minute per checkout key (REST and GraphQL); checkout-key calls never spend the merchant quota',
  },
  RATE_LIMIT_CHECKOUT_IP_PER_MIN: {
    schema: int(1, 1_000_000),
    default: '600',
    description: 'Checkout-key requests per minute per IP, whatever the key (many keys from one address share it)',
  },
  RATE_LIMIT_LINK_OPENS_PER_IP_PER_HOUR: {
    schema: int(1, 1_000_000),
    default: '30',
    description: 'Orders one IP may open from public payment links per hour (all links together): bounds what an anonymous caller can allocate',
  },
  RATE_LIMIT_LINK_OPENS_PER_LINK_PER_HOUR: {
    schema: int(1, 10_000_000),
    default: '600',
    description: 'Orders one payment link may open per hour, whatever the IP',
  },
  RATE_LIMIT_CLAIM_IP_PER_MIN: {
    schema: int(1, 1_000_000),
    default: '120',
    description:
      "Refund claim page requests per minute per IP (its status reads and address submissions, all links together); the anonymous claim page never spends a merchant's quota",
  },
  RATE_LIMIT_CLAIM_TOKEN_PER_MIN: {
    schema: int(1, 1_000_000),
    default: '10',
    description: "Addresses submitted per minute for one refund claim link (counted by the token's hash), on top of the per-IP limit",
  },
  REAUTH_WINDOW_S: {
    schema: int(30, 3600),
    default: '300',
    description:
      'How long `reauthenticate` (the password given again) lets a dashboard session rotate API keys, change the notification URL or the sweep schedule and change the team; a stolen access token alone cannot',
  },
  TEAM_INVITE_TTL_S: { schema: int(300, 2_592_000), default: '604800', description: 'How long a team invite link works (single use; docs/teams.md)' },
  TEAM_INVITE_URL: {
    schema: z.url({ protocol: /^https?$/ }).optional(),
    description:
      'The dashboard page that accepts team invites; the mailed link is this URL with `#token=<invite token>` (default `PUBLIC_BASE_URL/dashboard/invite`, the dashboard’s invite screen)',
  },
  PAYMENT_LINK_UNPAID_PER_CLIENT: {
    schema: int(1, 1_000_000),
    default: '2',
    description:
      "Unpaid orders one client (IP address; IPv6 by its /64) may hold on one payment link at once; one more is refused with `RATE_LIMITED` until one of them is paid or expires, so one address cannot reserve all of a small link's `max_usage`",
  },
  GRAPHQL_MAX_COST: {
    schema: int(1, 1_000_000),
    default: '2000',
    description:
      'Cost budget of one GraphQL operation (HTTP or graphql-ws), refused with `QUERY_TOO_COMPLEX` above it: an object field costs 1 plus its selection, a page (`first`/`limit`, default 20, at most 100) costs 1 + size × its row, another list 5 × its row, scalars 0 (src/graphql/limits.ts)',
  },
  GRAPHQL_MAX_ALIASES: {
    schema: int(0, 10_000),
    default: '15',
    description: 'Aliases allowed in one GraphQL operation (`__typename` aliases are free); more is refused with `TOO_MANY_ALIASES`',
  },
  GRAPHQL_INTROSPECTION: {
    schema: bool.optional(),
    description:
      'Answer GraphQL introspection (`__schema`, `__type`) over HTTP and WebSocket (default: on unless production; in production set `true` to enable it)',
  },
  GRAPHQL_MAX_DEPTH: {
    schema: int(1, 1000),
    default: '10',
    description: 'Deepest selection nesting in one GraphQL operation (introspection excluded); deeper is refused with `QUERY_TOO_DEEP`',
  },
  SUBSCRIPTION_LIMIT_PER_SOCKET: {
    schema: int(1, 100_000),
    default: '20',
    description: 'Active graphql-ws subscriptions on one socket; the next is refused with `SUBSCRIPTION_LIMIT_REACHED`',
  },
  SUBSCRIPTION_LIMIT_PER_KEY: {
    schema: int(1, 1_000_000),
    default: '200',
    description:
      'Active graphql-ws subscriptions per credential (API key, checkout key, dashboard session; the IP when anonymous) in one API process; the next is refused with `SUBSCRIPTION_LIMIT_REACHED`',
  },
  SUBSCRIPTION_AUTH_RECHECK_MS: {
    schema: int(100, 3_600_000),
    default: '30000',
    description:
      'How often a live graphql-ws subscription re-checks the credential it was opened with; a rotated API key, an expired checkout key or a revoked dashboard session ends it with that error (`extensions.code`), then `complete`',
  },
  EXPLORER_ENABLED: {
    schema: bool.optional(),
    description: 'Serve the offline GraphQL explorer (GraphiQL from the package, no CDN) at `/explorer` (default: on unless production)',
  },
  DEV_CHAINS: {
    schema: bool.optional(),
    description: 'Run local ETHEREUM, BINANCE, TRON and SOLANA chains for the sandbox, with test USDT/USDC and a funded faucet (default: on unless production)',
  },
  OFFER_UNWATCHED_NETWORKS: {
    schema: bool,
    default: 'false',
    description: 'Also list tokens and make QRs on networks nothing watches (API tests only: such payments are never detected)',
  },
  FAUCET_TOKEN_AMOUNT: { schema: decimalString, default: '1000', description: 'Sandbox faucet: token units (USDT/USDC) sent per asked token' },
  FAUCET_NATIVE_AMOUNT_EVM: { schema: decimalString, default: '0.01', description: 'Sandbox faucet: ETH/BNB sent with each ETHEREUM/BINANCE request, for gas' },
  FAUCET_NATIVE_AMOUNT_TRON: { schema: decimalString, default: '10', description: 'Sandbox faucet: TRX sent with each TRON request, for energy and bandwidth' },
  FAUCET_NATIVE_AMOUNT_SOLANA: {
    schema: decimalString,
    default: '0.01',
    description: 'Sandbox faucet: SOL sent with each SOLANA request, for fees and token-account rent',
  },
  FAUCET_EVM_PRIVATE_KEY: {
    schema: z
      .string()
      .regex(/^(0x)?[0-9a-fA-F]{64}$/, 'must be 32 bytes of hex')
      .optional(),
    secret: true,
    description: 'Sandbox faucet wallet on ETHEREUM/BINANCE (hex); default: the local chains’ funded dev faucet key',
  },
  FAUCET_TRON_PRIVATE_KEY: {
    schema: z
      .string()
      .regex(/^(0x)?[0-9a-fA-F]{64}$/, 'must be 32 bytes of hex')
      .optional(),
    secret: true,
    description: 'Sandbox faucet wallet on TRON (hex); default: the local chain’s funded dev faucet key',
  },
  FAUCET_SOLANA_SEED: {
    schema: z
      .string()
      .regex(/^[0-9a-fA-F]{64}$/, 'must be a 32-byte ed25519 seed in hex')
      .optional(),
    secret: true,
    description: 'Sandbox faucet wallet on SOLANA (32-byte ed25519 seed, hex); default: the local chain’s funded dev faucet key',
  },
  FAUCET_ADDRESS_WINDOW_S: {
    schema: int(1, 30 * 86400),
    default: '86400',
    description: 'Sandbox faucet: one request per address and network per this many seconds',
  },
  FAUCET_IP_PER_HOUR: { schema: int(1, 1_000_000), default: '10', description: 'Sandbox faucet: requests per IP per hour' },
  RATE_CACHE_TTL_MS: { schema: int(0, 3_600_000), default: '30000', description: 'How long a market rate is reused' },
  RATE_TIMEOUT_MS: { schema: int(50, 60_000), default: '2000', description: 'Timeout for one market-rate request' },
  RATE_SOURCES: {
    schema: z.string().regex(/^(none|[a-z]+(,[a-z]+)*)$/, 'comma-separated source ids, or none'),
    default: 'indodax,coingecko',
    description: 'Live rate sources in order (`indodax`, `coingecko`); `none` → internal fallback rate only',
  },
  RATE_INDODAX_URL: { schema: z.url(), default: 'https://indodax.com', description: 'Indodax public API base URL' },
  RATE_COINGECKO_URL: { schema: z.url(), default: 'https://api.coingecko.com', description: 'CoinGecko public API base URL' },
  RATE_MAX_CHANGE_PERCENT: {
    schema: z.coerce.number().gt(0).max(100),
    default: '10',
    description:
      'A live rate further than this from the last accepted rate of its token (the fallback rate before the first one) is refused unless two sources agree on it; the fallback rate is refused too when this far from the last accepted rate, and quotes then fail with `RATE_UNAVAILABLE` (503)',
  },
  FALLBACK_RATE_USDT_IDR: { schema: decimalString, default: '16250', description: 'Internal USDT/IDR rate used when live sources fail' },
  FALLBACK_RATE_USDC_IDR: { schema: decimalString, default: '16250', description: 'Internal USDC/IDR rate used when live sources fail' },
  ORDER_TTL_S: { schema: int(60, 7 * 86400), default: '1800', description: 'Default order lifetime (a merchant setting overrides it)' },
  IDEMPOTENCY_KEY_TTL_S: {
    schema: int(60, 30 * 86400),
    default: '86400',
    description:
      'How long an `Idempotency-Key` on order creation is remembered: a retry within it gets the original order (with a fresh checkout key); after it the key may be used again',
  },
  LATE_PAYMENT_WINDOW_S: {
    schema: int(0, 30 * 86400),
    default: '86400',
    description: 'After expiry, payments detected within this window still complete an order (and are flagged late)',
  },
  CLOSED_DEPOSIT_WATCH_S: {
    schema: int(0, 365 * 86400),
    default: '2592000',
    description:
      "How long a deposit address stays watched after its late window ends: transfers into it are recorded as unattributed (`late`) receipts and reported, never counted (default 30 days; EVM/TRON cost nothing per address, SOLANA reads closed deposits' token accounts every `CLOSED_DEPOSIT_POLL_EVERY` polls, 100 per call)",
  },
  CLOSED_DEPOSIT_POLL_EVERY: {
    schema: int(1, 100_000),
    default: '50',
    description:
      "SOLANA: the slow turn, once every this many watcher polls, reads every watched token account (closed deposits, and the other mints of open ones); an open deposit's own mint is read every poll (one getMultipleAccounts per 100 accounts)",
  },
  RECONCILE_INTERVAL_S: {
    schema: int(0, 7 * 86400),
    default: '3600',
    description:
      'How often the reconciliation job compares deposit addresses’ on-chain balances with the ledger (0 → never; `npm run cli -- reconcile` runs it by hand)',
  },
  RECONCILE_CONCURRENCY: { schema: int(1, 64), default: '8', description: 'Balance reads a reconciliation keeps in flight per network' },
  OPERATOR_TOKEN: {
    schema: z.string().min(32).optional(),
    secret: true,
    description:
      'Token of operators (≥ 32 chars), sent in the `x-operator-token` header (not `Authorization`, which carries dashboard sessions): the GraphQL `reconciliation` and `gasTanks` queries need it; unset → no operator access',
  },
  WATCH_POLL_MS: {
    schema: int(20, 60_000),
    default: '200',
    description:
      'How often a sandbox chain watcher polls its node (production: each network’s block time, `WATCH_POLL_MS_<NETWORK>`). An EVM poll reads the head block (one call); a new block adds its logs (one call); a SOLANA poll costs 2 calls plus one per 100 open deposits: docs/watchers.md *Detection path, cost and latency*',
  },
  ...(Object.fromEntries(
    NETWORK_KEYS.map((n) => [
      `WATCH_POLL_MS_${n}`,
      {
        schema: pollMsVar,
        description: `How often the ${n} watcher polls its node. Unset → production polls at the chain’s block time (${BLOCK_TIME_MS[n]} ms), the sandbox at \`WATCH_POLL_MS\`; while a push subscription is open the poll slows to \`WATCH_PUSH_POLL_MS\` (docs/watchers.md)`,
      },
    ]),
  ) as Record<`WATCH_POLL_MS_${(typeof NETWORK_KEYS)[number]}`, { schema: typeof pollMsVar; description: string }>),
  WATCH_PUSH: {
    schema: bool,
    default: 'true',
    description: 'Subscribe to new heads where a network has WebSocket URLs (`<ENV>_<NETWORK>_WS_URLS`): a head wakes the watcher at once. Off → poll only',
  },
  WATCH_PUSH_POLL_MS: {
    schema: int(100, 600_000),
    default: '5000',
    description:
      'While a network’s push subscription is open, its watcher polls this often at most (the fallback and catch-up: a dropped socket’s gap is scanned by the next poll); at most half of WATCHER_STALL_S (readiness calls a watcher silent that long stalled), never faster than the network’s own poll cadence',
  },
  WATCH_RUN_MS: {
    schema: int(1000, 600_000),
    default: '30000',
    description: 'How long one watcher job run keeps its lock before handing over (Agenda reschedules it)',
  },
  WATCH_LOCK_MS: {
    schema: int(3000, 600_000),
    default: '60000',
    description: 'Lock lifetime of a watcher run: another worker takes a network over this long after its worker died',
  },
  WATCH_MAX_BLOCK_RANGE: { schema: int(1, 100_000), default: '500', description: 'Largest block span per log query (providers cap eth_getLogs)' },
  WATCH_START_LOOKBACK_BLOCKS: {
    schema: int(0, 100_000),
    default: '100',
    description: 'On a network’s first run, how many blocks before the head to start scanning',
  },
  REORG_RECHECK_WINDOW_S: {
    schema: int(0, 30 * 86400),
    default: '3600',
    description:
      'After a payment is confirmed, its block hash is re-checked for this long: a block replaced by a reorg deeper than the confirmation depth raises `payment.reorged` (event, webhook, metric, error log). 0 turns the re-check off',
  },
  REORG_RECHECK_INTERVAL_MS: {
    schema: int(100, 3_600_000),
    default: '15000',
    description:
      'How often each watcher re-checks the blocks of its recently confirmed payments (at once after it sees a reorg below its cursor); one block-hash call per distinct block',
  },
  REORG_RECHECK_MAX_BLOCKS: { schema: int(1, 100_000), default: '500', description: 'Distinct blocks one re-check looks at at most (the newest first)' },
  RPC_TIMEOUT_MS: { schema: int(100, 120_000), default: '10000', description: 'Timeout of one chain RPC call' },
  CHAIN_IDENTITY_RECHECK_MS: {
    schema: int(1000, 3_600_000),
    default: '30000',
    description:
      'How often each RPC provider’s chain identity (chain id, genesis hash) is checked again while in use; it is also checked on first use, on every switch of provider, and before anything is treated as a reorg (docs/watchers.md "Chain identity")',
  },
  WATCHER_STALL_S: {
    schema: int(1, 3600),
    default: '15',
    description: '`/readyz` details: a watcher with no completed poll for this long is `stalled` (`provider_down` when its last poll failed on RPC)',
  },
  WATCHER_LAG_S: {
    schema: int(1, 86_400),
    default: '60',
    description: '`/readyz` details: a watcher polling fine but not caught up with the chain head for this long is `lagging`',
  },
  EXPIRY_INTERVAL_S: { schema: int(1, 3600), default: '10', description: 'How often the order-expiry job runs' },
  ORDER_GROUP_COMMIT: {
    schema: bool,
    default: 'true',
    description:
      'Group commit of order creation: concurrent orders go to PostgreSQL as one multi-row insert and one commit (each request answered after that commit); `false` → one statement per order',
  },
  ORDER_GROUP_COMMIT_WINDOW_MS: {
    schema: int(0, 2),
    default: '1',
    description: 'Group commit: longest wait (ms) for more orders while a batch is already in flight; a lone order never waits',
  },
  ORDER_GROUP_COMMIT_MAX: { schema: int(1, 1000), default: '100', description: 'Group commit: most orders in one insert' },
  ORDER_GROUP_COMMIT_CONNECTIONS: {
    schema: int(1, 100),
    default: '1',
    description:
      'Group commit: most order batches in flight at once, i.e. the most pooled connections order creation holds (keep it below `DATABASE_POOL_MAX`). With 1, orders that arrive while a batch is in flight all go in the next one, and the window does not apply',
  },
  ORDER_MIN_IDR: { schema: int(1, Number.MAX_SAFE_INTEGER), default: '1000', description: 'Smallest order amount (IDR)' },
  ORDER_MAX_IDR: { schema: int(1, Number.MAX_SAFE_INTEGER), default: '1000000000', description: 'Largest order amount (IDR)' },
  SETTLEMENT_HOLD_SECONDS_PRODUCTION: {
    schema: int(0, 30 * 86400),
    default: '86400',
    description:
      'Production: sweeps go to a newly set settlement address only this long after the change (the hold; docs/security.md "Settlement addresses"). Until then they keep going to the previous address, none for the first one',
  },
  SETTLEMENT_HOLD_SECONDS_SANDBOX: {
    schema: int(0, 30 * 86400),
    default: '0',
    description: 'Sandbox: the same hold for sandbox settlement addresses (default none)',
  },
  WEBHOOK_ALLOW_PRIVATE_URLS: {
    schema: bool,
    default: 'false',
    description:
      'Allow webhook URLs that resolve to private, loopback, link-local, CGNAT, ULA, multicast or unspecified addresses (in every NODE_ENV; set `true` only for local development and tests). Checked when a URL is saved and again on every send',
  },
  WEBHOOK_TIMEOUT_MS: { schema: int(100, 120_000), default: '10000', description: 'Timeout of one webhook attempt, connect to answer (ms)' },
  WEBHOOK_RETRY_SCHEDULE_S: {
    schema: z
      .string()
      .transform((s) => s.split(',').map((x) => Number(x.trim())))
      .pipe(
        z
          .array(
            z
              .number()
              .positive()
              .max(30 * 86400),
          )
          .min(1)
          .max(50),
      ),
    default: '30,120,600,1800,3600,10800,21600,43200,86400,86400',
    description:
      'Waits in seconds before each webhook retry, comma-separated; after the last one the delivery is failed (default: 11 attempts over ≈ 2.9 days)',
  },
  WEBHOOK_RETRY_JITTER: { schema: z.coerce.number().min(0).max(0.9), default: '0.2', description: 'Random ± fraction applied to each webhook retry wait' },
  WEBHOOK_CONCURRENCY: {
    schema: int(1, 10_000),
    default: '64',
    description: 'Webhook deliveries in progress per worker process, all endpoints together (sending, or sent and not yet recorded)',
  },
  WEBHOOK_CONCURRENCY_PER_ENDPOINT: {
    schema: int(1, 1000),
    default: '4',
    description: 'Webhook HTTP requests in flight per endpoint (scheme://host:port) per worker: a slow or dead endpoint holds at most this many slots',
  },
  WEBHOOK_POLL_MS: {
    schema: int(10, 60_000),
    default: '1000',
    description: 'How often a worker looks for due webhook retries (new deliveries wake it at once through LISTEN)',
  },
  WEBHOOK_SWEEP_INTERVAL_MS: {
    schema: int(100, 3_600_000),
    default: '30000',
    description: 'Period of the webhook lease requeue: re-queues deliveries whose worker died mid-attempt (expired lease) and drains the outbox',
  },
  SMTP_HOST: {
    schema: z.string().min(1).max(253).optional(),
    description:
      'SMTP server for customer mails (the receipt on Success, a notice on Underpaid/Expired, to the order\'s `email`); unset → no mail is sent (docs/configuration.md "Customer mail")',
  },
  SMTP_PORT: { schema: int(1, 65535), default: '587', description: 'SMTP server port (587 submission with STARTTLS, 465 with `SMTP_SECURE=true`)' },
  SMTP_SECURE: { schema: bool, default: 'false', description: '`true` → TLS from the first byte (port 465); `false` → STARTTLS when the server offers it' },
  SMTP_REQUIRE_TLS: {
    schema: bool,
    default: 'false',
    description: '`true` → refuse to send unless STARTTLS succeeds (set it whenever the server is not on this machine)',
  },
  SMTP_USER: { schema: z.string().min(1).max(500).optional(), description: 'SMTP login user (unset → no login)' },
  SMTP_PASSWORD: { schema: z.string().min(1).max(500).optional(), secret: true, description: 'SMTP login password' },
  SMTP_FROM: {
    schema: z.string().min(3).max(320).optional(),
    description: 'Sender of customer mails, e.g. `Receipts <receipts@gateway.example>`; required when `SMTP_HOST` is set',
  },
  SMTP_POLL_MS: { schema: int(100, 3_600_000), default: '5000', description: 'How often a worker sends the queued customer mails' },
  SMTP_TIMEOUT_MS: { schema: int(1000, 300_000), default: '30000', description: 'Timeout of one SMTP conversation (connect, greeting, each command)' },
  SMTP_MAX_ATTEMPTS: {
    schema: int(1, 100),
    default: '8',
    description: 'Attempts per customer mail before it is marked failed (waits double from 30 s, at most 1 h)',
  },
  SMTP_MAX_AGE_S: {
    schema: int(60, 30 * 86400),
    default: '86400',
    description:
      'A queued customer mail older than this is marked failed instead of sent (a receipt days late, e.g. after SMTP was configured, would confuse more than help)',
  },
  GAS_TANK_MNEMONIC_SANDBOX: {
    schema: mnemonic.optional(),
    secret: true,
    description:
      'BIP-39 mnemonic of the sandbox gas tanks (one per network, key at derivation index 0; never a merchant seed): they pay sweeps’ network fees. Generated into `DATA_DIR` in development; unset outside development → sandbox sweeps are off',
  },
  GAS_TANK_MNEMONIC_PRODUCTION: {
    schema: mnemonic.optional(),
    secret: true,
    description:
      'BIP-39 mnemonic of the production gas tanks (fund their addresses, shown to operators by the GraphQL `gasTanks` query and `/readyz`); unset → production sweeps are off',
  },
  ...(Object.fromEntries(
    NETWORK_KEYS.map((n) => [
      `GAS_TANK_LOW_${n}`,
      {
        schema: baseUnits,
        default: DEFAULT_TANK_LOW[n]!,
        description: `A ${n} gas tank holding less than this (${NATIVE_UNIT[n]}) is \`low\`: logged, shown to operators and in \`/readyz\` details; sweeps wait while it cannot pay their fees`,
      },
    ]),
  ) as Record<`GAS_TANK_LOW_${(typeof NETWORK_KEYS)[number]}`, { schema: typeof baseUnits; default: string; description: string }>),
  ...(Object.fromEntries(
    NETWORK_KEYS.map((n) => [
      `SWEEP_NATIVE_PRICE_${n}`,
      {
        schema: z.coerce.number().positive(),
        default: DEFAULT_NATIVE_PRICE[n]!,
        description: `Rough USD price of one ${n} native coin, only for the dust rule (fees compared with stablecoin amounts); sandbox chains use it too`,
      },
    ]),
  ) as Record<`SWEEP_NATIVE_PRICE_${(typeof NETWORK_KEYS)[number]}`, { schema: z.ZodNumber; default: string; description: string }>),
  SWEEP_POLL_MS: {
    schema: int(100, 600_000),
    default: '3000',
    description: 'How often the sweep engine of each environment and network advances its sweeps (plan, fund, send, track)',
  },
  REFUND_POLL_MS: {
    schema: int(0, 600_000),
    default: '3000',
    description:
      'How often the refund engine of each environment and network advances its refunds (top up, sign, store, broadcast, track, confirm); 0: the worker runs no refund engine',
  },
  SWEEP_DUST_PERCENT: {
    schema: z.coerce.number().min(0).max(100),
    default: '5',
    description: 'A deposit balance is not swept while the network fee of its sweep (top-up included) is more than this share of it, in percent',
  },
  SWEEP_BATCH_SIZE: { schema: int(1, 1000), default: '200', description: 'Most deposits one sweep run plans, and one funding transaction tops up' },
  SWEEP_HOLD_RECHECK_S: {
    schema: int(60, 7 * 86_400),
    default: '3600',
    description:
      'A held deposit (dust, below the token minimum) takes no planning slot until its hold is this old, it receives more, or a "sweep now" made after the check asks for it',
  },
  SWEEP_STUCK_AFTER_S: {
    schema: int(1, 86_400),
    default: '180',
    description:
      'A sweep transaction with a nonce (EVM) still pending (or dropped and refused again) after this long is replaced by the same nonce with a higher fee (+25 % each time)',
  },
  SWEEP_MAX_FEE_BUMP_PERCENT: { schema: int(100, 1000), default: '300', description: 'Highest fee of a replacement, in percent of the network fee at signing' },
  REFUND_CRASH_AFTER: {
    schema: z.enum(['fund-sign', 'fund-broadcast', 'send-sign', 'send-broadcast', 'sent']).optional(),
    description: 'TESTS ONLY (refused in production): the refund engine exits the process hard (SIGKILL-like) right after this step, to prove crash safety',
  },
  SWEEP_CRASH_AFTER: {
    schema: z.enum(['plan', 'fund-sign', 'fund-broadcast', 'funded', 'send-sign', 'send-broadcast', 'sent']).optional(),
    description: 'TESTS ONLY (refused in production): the sweep engine exits the process hard (SIGKILL-like) right after this step, to prove crash safety',
  },
  ...chainVars(),
  ...genesisVars(),
  EVM_SWEEP_BATCH_MAX: {
    schema: int(1, 1000),
    default: '100',
    description: 'Most deposits one EIP-7702 batch sweep transaction carries (ETHEREUM/BINANCE with a Sweeper)',
  },
  ...evmSweepVars(),
  ...pushWsVars(),
} satisfies Record<string, VarSpec>;

export type ConfigVar = keyof typeof CONFIG_VARS;

/** The README's configuration table, generated from the declarations above (a test keeps them in step). */
export function configMarkdownTable(): string {
  const rows = (Object.entries(CONFIG_VARS) as [string, VarSpec][]).map(
    ([name, spec]) =>
      `| \`${name}\` | ${spec.default === undefined ? '—' : `\`${spec.default}\``} | ${spec.secret ? 'yes' : 'no'} | ${spec.description.replace(/\|/g, '\\|')} |`,
  );
  return ['| Variable | Default | Secret | Meaning |', '|---|---|---|---|', ...rows].join('\n');
}

type Parsed = { [K in ConfigVar]: z.output<(typeof CONFIG_VARS)[K]['schema']> };

export interface Config extends Omit<Parsed, 'MASTER_KEY' | 'JWT_SECRET' | 'DEV_CHAINS' | 'GRAPHQL_INTROSPECTION' | 'EXPLORER_ENABLED' | 'PUBLIC_BASE_URL'> {
  EXPLORER_ENABLED: boolean;
  /** Unset when MASTER_KEY_FILE names the key (read by `keyEncryptionKeys`). */
  MASTER_KEY: Buffer | undefined;
  JWT_SECRET: string;
  DEV_CHAINS: boolean;
  /** Introspection answered (GRAPHQL_INTROSPECTION; default off in production). */
  GRAPHQL_INTROSPECTION: boolean;
  PUBLIC_BASE_URL: string;
  /** False when PUBLIC_BASE_URL was derived from HOST/PORT (the server then fills in the real port). */
  publicBaseUrlExplicit: boolean;
  isProduction: boolean;
  /** Secrets that come from the development secrets file (printed loudly at boot). */
  generatedSecrets: string[];
  /** True when this start created the development secrets file (rather than reading it). */
  devSecretsCreated: boolean;
}

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(readonly problems: { variable: string; message: string }[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p.variable}: ${p.message}`).join('\n')}`);
  }
}

/** Parses and validates every variable; values come from `env` (defaults to process.env). */
export function parseConfig(env: NodeJS.ProcessEnv = process.env): Parsed {
  const out: Record<string, unknown> = {};
  const problems: { variable: string; message: string }[] = [];
  for (const [name, spec] of Object.entries(CONFIG_VARS) as [ConfigVar, VarSpec][]) {
    const raw = env[name] === '' ? undefined : (env[name] ?? spec.default);
    const res = spec.schema.safeParse(raw);
    if (res.success) out[name] = res.data;
    else problems.push({ variable: name, message: res.error.issues.map((i) => i.message).join('; ') });
  }
  if (out.SMTP_HOST !== undefined && out.SMTP_FROM === undefined && !problems.some((p) => p.variable === 'SMTP_FROM')) {
    problems.push({ variable: 'SMTP_FROM', message: 'required when SMTP_HOST is set (the sender of customer mails)' });
  }
  if (out.SMTP_PASSWORD !== undefined && out.SMTP_USER === undefined) problems.push({ variable: 'SMTP_USER', message: 'required when SMTP_PASSWORD is set' });
  if (problems.length === 0 && (out.ORDER_MIN_IDR as number) > (out.ORDER_MAX_IDR as number)) {
    problems.push({ variable: 'ORDER_MIN_IDR', message: 'must not exceed ORDER_MAX_IDR' });
  }
  if (problems.length) throw new ConfigError(problems);
  return out as Parsed;
}

export interface DevSecrets {
  MASTER_KEY: Buffer;
  JWT_SECRET: string;
  /** Sandbox gas tanks' mnemonic (files written before sweeps get one added on read). */
  GAS_TANK_MNEMONIC_SANDBOX: string;
  /** Set when this call generated them. */
  created?: boolean;
}

/**
 * Completes a parsed config. In production every secret must be given; in development the missing ones
 * come from `devSecrets()` (a file under DATA_DIR, created on first use).
 */
export function finalizeConfig(parsed: Parsed, devSecrets: () => DevSecrets): Config {
  const isProduction = parsed.NODE_ENV === 'production';
  if (isProduction) {
    const problems: { variable: string; message: string }[] = [];
    if (!parsed.MASTER_KEY && !parsed.MASTER_KEY_FILE) problems.push({ variable: 'MASTER_KEY', message: 'required in production (or MASTER_KEY_FILE)' });
    if (!parsed.JWT_SECRET) problems.push({ variable: 'JWT_SECRET', message: 'required in production' });
    if (!parsed.DATABASE_URL) problems.push({ variable: 'DATABASE_URL', message: 'required in production (no embedded database)' });
    if (parsed.REFUND_CRASH_AFTER) problems.push({ variable: 'REFUND_CRASH_AFTER', message: 'a test-only crash hook; not allowed in production' });
    if (parsed.SWEEP_CRASH_AFTER) problems.push({ variable: 'SWEEP_CRASH_AFTER', message: 'a test-only crash hook; not allowed in production' });
    if (parsed.DEV_CHAINS) problems.push({ variable: 'DEV_CHAINS', message: 'local dev chains are not allowed in production' });
    if (parsed.RATE_LIMIT_STORE === 'memory' && parsed.ROLE !== 'all') {
      problems.push({ variable: 'RATE_LIMIT_STORE', message: '`memory` only holds in a single process; use `postgres`' });
    }
    if (problems.length) throw new ConfigError(problems);
  }
  if (parsed.MASTER_KEY && parsed.MASTER_KEY_FILE)
    throw new ConfigError([{ variable: 'MASTER_KEY_FILE', message: 'set MASTER_KEY or MASTER_KEY_FILE, not both' }]);
  const generatedSecrets: string[] = [];
  let dev: DevSecrets | undefined;
  const fromDev = <K extends keyof DevSecrets>(k: K): DevSecrets[K] => {
    dev ??= devSecrets();
    generatedSecrets.push(k);
    return dev[k];
  };
  const MASTER_KEY = parsed.MASTER_KEY ?? (parsed.MASTER_KEY_FILE ? undefined : fromDev('MASTER_KEY'));
  const JWT_SECRET = parsed.JWT_SECRET ?? fromDev('JWT_SECRET');
  // Not a warning-worthy secret (it only pays sandbox fees): taken from the file without the loud notice.
  const GAS_TANK_MNEMONIC_SANDBOX = parsed.GAS_TANK_MNEMONIC_SANDBOX ?? (isProduction ? undefined : (dev ??= devSecrets()).GAS_TANK_MNEMONIC_SANDBOX);
  return {
    ...parsed,
    MASTER_KEY,
    JWT_SECRET,
    GAS_TANK_MNEMONIC_SANDBOX,
    devSecretsCreated: dev?.created === true,
    DEV_CHAINS: parsed.DEV_CHAINS ?? !isProduction,
    GRAPHQL_INTROSPECTION: parsed.GRAPHQL_INTROSPECTION ?? !isProduction,
    EXPLORER_ENABLED: parsed.EXPLORER_ENABLED ?? !isProduction,
    PUBLIC_BASE_URL: (parsed.PUBLIC_BASE_URL ?? `http://${parsed.HOST === '0.0.0.0' ? '127.0.0.1' : parsed.HOST}:${parsed.PORT}`).replace(/\/$/, ''),
    publicBaseUrlExplicit: parsed.PUBLIC_BASE_URL !== undefined,
    isProduction,
    generatedSecrets,
  };
}
