import { Command, Option } from 'commander';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import pino from 'pino';
import 'reflect-metadata';
import { ConfigError, configMarkdownTable, loadConfig, type Config } from '../config/index.js';
import type { App } from '../app.js';
import { ENVIRONMENTS, NETWORKS, type Environment, type Network } from '../common/environment.js';
import { operatorContext } from '../common/context.js';
import { isDomainError } from '../common/errors.js';

/**
 * Operator CLI. Logs go to stderr; with --json, stdout carries exactly one JSON object. Heavy modules
 * (the service graph, GraphQL, chain clients) load inside the command that needs them: a CLI call
 * should answer in a couple of seconds.
 */

async function withApp<T>(fn: (app: App, config: Config, applied: string[]) => Promise<T>, opts: { migrate?: boolean } = {}): Promise<T> {
  const config = loadConfig();
  const log = pino({ level: config.LOG_LEVEL === 'info' ? 'warn' : config.LOG_LEVEL }, pino.destination(2));
  const [{ openDatabase }, { assertSchemaCurrent, connectOrm, migrate }, { openApp }] = await Promise.all([
    import('../db/open-database.js'),
    import('../db/orm.js'),
    import('../app.js'),
  ]);
  const db = await openDatabase(config, log);
  const orm = await connectOrm(db.url, 2);
  try {
    // With MIGRATE_ON_START=false, migrating is the `migrate` command's job alone: other commands check.
    let applied: string[] = [];
    if (opts.migrate || config.MIGRATE_ON_START) applied = await migrate(orm, config.DATABASE_SESSION_URL);
    else await assertSchemaCurrent(orm);
    return await fn(await openApp(config, orm, log), config, applied);
  } finally {
    await orm.close(true);
    await db.release();
  }
}

function print(json: boolean, obj: Record<string, unknown>, human: string): void {
  process.stdout.write(json ? JSON.stringify(obj) + '\n' : human + '\n');
}

/** RPC URLs of the local chains a running gateway (npm start) wrote to `DATA_DIR`; null when none run. */
function runningDevChains(config: Config): Partial<Record<Network, string>> | null {
  try {
    return JSON.parse(readFileSync(join(config.DATA_DIR, 'devchains.json'), 'utf8')) as Partial<Record<Network, string>>;
  } catch {
    return null;
  }
}

/** The running sandbox chains as `watchedNetworks` overrides (`sandbox:<NETWORK>` → URLs); empty: configured RPC URLs only. */
function devChainOverrides(config: Config): Record<string, string[]> {
  return Object.fromEntries(Object.entries(runningDevChains(config) ?? {}).map(([n, u]) => [`sandbox:${n}`, [u!]]));
}

/** The watched networks as the worker builds them: with the local dev chains' EVM sweep contracts when DEV_CHAINS is on. */
async function cliWatchedNetworks(config: Config, overrides: Record<string, string[]>) {
  const [{ watchedNetworks }, local] = await Promise.all([import('../chains/networks.js'), config.DEV_CHAINS ? import('../devchain/devchain.js') : undefined]);
  return watchedNetworks(config, overrides, { localSweepContracts: local?.DEV_SWEEP_CONTRACTS });
}

const program = new Command('gateway').description('Crypto payment gateway operator CLI');

program
  .command('migrate')
  .description('Apply pending database migrations (one step per deploy when MIGRATE_ON_START=false)')
  .action(async () => {
    const applied = await withApp(async (_app, _config, names) => names, { migrate: true });
    console.log(applied.length ? `migrations applied: ${applied.join(', ')}` : 'migrations applied: none pending (schema is current)');
  });

const merchant = program.command('merchant').description('Merchants');
merchant
  .command('create')
  .description('Create a merchant, its owner dashboard user and one API key per environment')
  .requiredOption('--name <name>', 'merchant name')
  .requiredOption('--email <email>', 'owner login email')
  .requiredOption('--password <password>', 'owner login password (min 8 characters)')
  .option('--fee-percent <percent>', 'platform fee percent', '1')
  .addOption(new Option('--fee-mode <mode>', 'who bears the fee').choices(['included', 'excluded']).default('included'))
  .option('--json', 'print one JSON object')
  .action(async (o: { name: string; email: string; password: string; feePercent: string; feeMode: string; json?: boolean }) => {
    await withApp(async (app) => {
      const em = app.orm.em.fork();
      const created = await app.merchants.create(operatorContext(em, 'cli merchant create'), {
        name: o.name,
        email: o.email,
        password: o.password,
        platformFeePercent: o.feePercent,
        feeIncluded: o.feeMode === 'included',
      });
      print(
        !!o.json,
        {
          merchant_id: created.merchant.id,
          email: created.user.email,
          sandbox_api_key: created.apiKeys.sandbox.apiKey,
          production_api_key: created.apiKeys.production.apiKey,
        },
        [
          `merchant ${created.merchant.id} (${created.merchant.name}) created; owner ${created.user.email}`,
          `sandbox API key:    ${created.apiKeys.sandbox.apiKey}`,
          `production API key: ${created.apiKeys.production.apiKey}`,
          'Keys are shown once: store them now.',
        ].join('\n'),
      );
    });
  });

merchant
  .command('rotate-key')
  .description('Rotate a merchant API key (the old key stops working at once)')
  .requiredOption('--merchant <id>', 'merchant id')
  .addOption(new Option('--environment <env>', 'environment').choices([...ENVIRONMENTS]).makeOptionMandatory())
  .option('--json', 'print one JSON object')
  .action(async (o: { merchant: string; environment: Environment; json?: boolean }) => {
    await withApp(async (app) => {
      const em = app.orm.em.fork();
      const k = await app.apiKeys.rotate(em, o.merchant, o.environment, operatorContext(em, 'cli merchant rotate-key'));
      print(!!o.json, { merchant_id: o.merchant, environment: o.environment, api_key: k.apiKey }, `new ${o.environment} API key: ${k.apiKey}`);
    });
  });

merchant
  .command('set-webhook')
  .description('Set the notification_url of an environment ("" clears it); production needs https and a public address')
  .requiredOption('--merchant <id>', 'merchant id')
  .addOption(new Option('--environment <env>', 'environment').choices([...ENVIRONMENTS]).makeOptionMandatory())
  .requiredOption('--url <url>', 'webhook URL')
  .option('--json', 'print one JSON object')
  .action(async (o: { merchant: string; environment: Environment; url: string; json?: boolean }) => {
    await withApp(async (app) => {
      const em = app.orm.em.fork();
      const m = await app.webhooks.settings.setForMerchant(
        em,
        o.merchant,
        { environment: o.environment, url: o.url || null },
        operatorContext(em, 'cli merchant set-webhook'),
      );
      const url = o.environment === 'production' ? m.notificationUrlProduction : m.notificationUrlSandbox;
      print(
        !!o.json,
        { merchant_id: m.id, environment: o.environment, notification_url: url },
        url ? `${o.environment} notification_url: ${url}` : `${o.environment} notification_url cleared`,
      );
    });
  });

merchant
  .command('set-fee')
  .description('Set a merchant’s platform fee percent (administrator); applies to quotes locked from now on')
  .requiredOption('--merchant <id>', 'merchant id')
  .requiredOption('--percent <percent>', 'fee percent, e.g. 1 or 0.75')
  .option('--json', 'print one JSON object')
  .action(async (o: { merchant: string; percent: string; json?: boolean }) => {
    await withApp(async (app) => {
      const m = await app.merchants.setPlatformFee(operatorContext(app.orm.em.fork(), 'cli merchant set-fee'), o.merchant, o.percent);
      print(!!o.json, { merchant_id: m.id, platform_fee_percent: m.platformFeePercent }, `platform fee of ${m.id}: ${m.platformFeePercent} %`);
    });
  });

program
  .command('reconcile')
  .description(
    "Compare every deposit address's on-chain balances with the ledger, per watched network; exit 2 when any differs, 3 when a network could not be compared",
  )
  .addOption(new Option('--environment <env>', 'only this environment').choices([...ENVIRONMENTS]))
  .addOption(new Option('--network <network>', 'only this network').choices([...NETWORKS]))
  .option('--json', 'print one JSON object')
  .action(async (o: { environment?: Environment; network?: Network; json?: boolean }) => {
    await withApp(async (app, config) => {
      // The local sandbox chains of a running gateway (npm start) are found the way `dev pay` finds them.
      const overrides = devChainOverrides(config);
      const targets = (await cliWatchedNetworks(config, overrides)).filter(
        (t) => (!o.environment || t.environment === o.environment) && (!o.network || t.network === o.network),
      );
      const runs = [];
      for (const t of targets) {
        runs.push(await app.reconciliation.reconcile(app.orm.em.fork(), t));
        await t.adapter.close();
      }
      const bad = runs.reduce((n, r) => n + r.mismatches.length, 0);
      const { recordAudit } = await import('../modules/audit/audit.service.js');
      const em = app.orm.em.fork();
      await recordAudit(em, operatorContext(em, 'cli reconcile'), 'operator.reconcile_run', {
        after: { networks: runs.map((r) => `${r.environment}:${r.network}`), count: bad },
      });
      const human = runs
        .map(
          (r) =>
            `${r.environment}:${r.network} at block ${r.atBlock ?? '-'}: ${r.error ? `not compared (${r.error})` : `${r.checked} checked, ${r.mismatches.length} mismatches`}` +
            r.mismatches
              .map(
                (m) =>
                  `\n  ${m.address} ${m.tokenSymbol} (${m.tokenAddress}): on chain ${m.onChain}, ledger ${m.ledger}; recorded tx ${m.txHashes.join(', ') || '-'}; unrecorded ${m.failedTxHashes.join(', ') || '-'}; in flight ${m.inFlightTxHashes.join(', ') || '-'}`,
              )
              .join('') +
            (r.held.length
              ? `\n  held (not swept): ${r.held.length}` + r.held.map((h) => `\n  ${h.address} ${h.tokenSymbol}: ${h.balance} held, ${h.reason}`).join('')
              : ''),
        )
        .join('\n');
      print(!!o.json, { runs, mismatches: bad }, human || 'no watched networks');
      // 2: something differs; 3: nothing differs, but a network could not be compared (its books are not known to close).
      if (bad) process.exitCode = 2;
      else if (runs.some((r) => r.error)) process.exitCode = 3;
    });
  });

const dev = program.command('dev').description('Sandbox helpers for the local chains `npm start` runs');
dev
  .command('pay')
  .description('Pay like a customer on a local sandbox chain: mint test tokens to a dev wallet and transfer them to an address')
  .addOption(new Option('--network <network>', 'local chain').choices([...NETWORKS]).makeOptionMandatory())
  .requiredOption('--to <address>', 'deposit address (destinationAddress)')
  .requiredOption('--amount <amount>', 'token units as shown to the customer, e.g. 9.231614 (totalAmount)')
  .addOption(new Option('--token <symbol>', 'test token').choices(['USDT', 'USDC']).default('USDT'))
  .option(
    '--from-key <key>',
    'pay from your own wallet (a key from `dev wallet`, funded by the faucet) instead of minting to the dev wallet: hex secp256k1 key (ETHEREUM, BINANCE, TRON) or hex ed25519 seed (SOLANA)',
  )
  .option('--json', 'print one JSON object')
  .action(async (o: { network: Network; to: string; amount: string; token: 'USDT' | 'USDC'; fromKey?: string; json?: boolean }) => {
    const config = loadConfig();
    const urls = runningDevChains(config);
    if (!urls) throw new Error('no local dev chains found: start the gateway first (npm start, with DEV_CHAINS on)');
    const rpcUrl = urls[o.network];
    if (!rpcUrl) throw new Error(`the running gateway has no local ${o.network} chain`);
    const { devPay } = await import('../devchain/index.js');
    const paid = await devPay({ network: o.network, rpcUrl, to: o.to, amount: o.amount, token: o.token, fromKey: o.fromKey });
    print(
      !!o.json,
      { network: o.network, token: paid.token, to: o.to, amount: paid.amount.toString(), tx_hash: paid.txHash },
      `sent ${o.amount} ${o.token} to ${o.to} on the local ${o.network} chain: ${paid.txHash}`,
    );
  });
dev
  .command('wallet')
  .description(
    'Make a new wallet for a local sandbox chain: its address (for the faucet) and its key (for `dev pay --from-key`). Sandbox only: the key is printed',
  )
  .addOption(new Option('--network <network>', 'network').choices([...NETWORKS]).makeOptionMandatory())
  .option('--json', 'print one JSON object')
  .action(async (o: { network: Network; json?: boolean }) => {
    const { newDevWallet } = await import('../devchain/index.js');
    const { address, privateKey: key } = newDevWallet(o.network);
    print(
      !!o.json,
      { network: o.network, address, private_key: key },
      `${o.network} wallet\n  address:     ${address}\n  private key: ${key}  (sandbox only: anyone who sees it can spend)`,
    );
  });

const gasTank = program.command('gas-tank').description('Gas tanks: the EVM sweep contracts (docs/sweeps-evm.md)');
const deployOptions = (c: Command) =>
  c
    .addOption(new Option('--network <network>', 'EVM network').choices(['ETHEREUM', 'BINANCE']).makeOptionMandatory())
    .addOption(new Option('--environment <environment>', 'whose RPC URLs to use').choices([...ENVIRONMENTS]).makeOptionMandatory())
    .requiredOption('--key-file <file>', 'file holding the deploying key as hex (the gas tank’s; `-` reads stdin). Never pass a key on the command line')
    .option('--rpc-url <url>', 'RPC URL (default: the first of <ENV>_<NETWORK>_RPC_URLS)')
    .option('--json', 'print one JSON object');
interface DeployOpts {
  network: Network;
  environment: Environment;
  keyFile: string;
  rpcUrl?: string;
  json?: boolean;
}
/** Compiles `contract`, deploys it with the key of `--key-file`, prints the address to put in config. */
async function deploySweepContract(o: DeployOpts, contract: 'disperse' | 'sweeper'): Promise<void> {
  const config = loadConfig();
  const [{ EvmRpcClient, deployEvmContract, evmAddressOfKey, sweepContractCreationCode }, { compileSweepContracts }] = await Promise.all([
    import('../chains/evm/index.js'),
    import('../devchain/devchain.js'),
  ]);
  const text = readFileSync(o.keyFile === '-' ? 0 : o.keyFile, 'utf8')
    .trim()
    .replace(/^0x/, '');
  if (!/^[0-9a-fA-F]{64}$/.test(text)) throw new Error('--key-file must hold a 32-byte key as 64 hex characters');
  const key = Uint8Array.from(Buffer.from(text, 'hex'));
  const envKey = o.environment === 'sandbox' ? 'SANDBOX' : 'PRODUCTION';
  const url = o.rpcUrl ?? (config[`${envKey}_${o.network}_RPC_URLS`] as string[] | undefined)?.[0];
  if (!url) throw new Error(`no RPC URL: set ${envKey}_${o.network}_RPC_URLS or pass --rpc-url`);
  const compiled = compileSweepContracts({ cacheDir: join(config.DATA_DIR, 'solc') })[contract];
  const tank = evmAddressOfKey(key);
  const code = sweepContractCreationCode(contract, compiled.bytecode, tank);
  const d = await deployEvmContract(new EvmRpcClient({ urls: [url], timeoutMs: config.RPC_TIMEOUT_MS }), key, code);
  const variable = `${envKey}_${o.network}_${contract === 'sweeper' ? 'SWEEPER' : 'DISPERSE'}_ADDRESS`;
  print(
    !!o.json,
    {
      network: o.network,
      environment: o.environment,
      contract,
      address: d.address,
      tx_hash: d.txHash,
      gas_used: d.gasUsed.toString(),
      ...(contract === 'sweeper' && { tank }),
      config: variable,
    },
    `${contract === 'sweeper' ? `Sweeper (obeys the tank ${tank})` : 'Disperse'} deployed on ${o.network} (${o.environment}) at ${d.address} in ${d.txHash}\nset ${variable}=${d.address}`,
  );
}
deployOptions(
  gasTank
    .command('deploy-disperse')
    .description('Deploy the Disperse contract (one transaction tops up many deposits) and print the address for <ENV>_<NETWORK>_DISPERSE_ADDRESS'),
).action((o: DeployOpts) => deploySweepContract(o, 'disperse'));
deployOptions(
  gasTank
    .command('deploy-sweeper')
    .description(
      'Deploy the EIP-7702 Sweeper that obeys this key’s address only (the gas tank) and print the address for <ENV>_<NETWORK>_SWEEPER_ADDRESS; deploy a new one when the tank key changes',
    ),
).action((o: DeployOpts) => deploySweepContract(o, 'sweeper'));

program
  .command('analytics:role')
  .description(
    'Create or update the read-only analytics role (ANALYTICS_DB_ROLE, password ANALYTICS_DB_PASSWORD; NOLOGIN without one): it may read the analytics views only',
  )
  .option('--json', 'print one JSON object')
  .action(async (o: { json?: boolean }) => {
    await withApp(async (app, config) => {
      const { ensureAnalyticsRole } = await import('../modules/analytics/analytics-role.service.js');
      const conn = app.orm.em.fork().getConnection();
      const [{ db }] = await conn.execute<{ db: string }[]>('select current_database() as db');
      const r = await ensureAnalyticsRole((sql) => conn.execute(sql), db!, { role: config.ANALYTICS_DB_ROLE, password: config.ANALYTICS_DB_PASSWORD });
      print(
        !!o.json,
        { role: r.role, login: r.login, database: r.database },
        `analytics role ${r.role} ${r.login ? 'can log in' : 'is NOLOGIN (set ANALYTICS_DB_PASSWORD to allow logins)'}; it reads only the analytics views of ${r.database}`,
      );
    });
  });

// `gas-tank` may already hold the EVM contract commands: attach to it rather than make a second one
const gasTankCommand =
  program.commands.find((c) => c.name() === 'gas-tank') ?? program.command('gas-tank').description('Gas tanks: the operator wallets that pay sweep fees');
gasTankCommand
  .command('stake')
  .description(
    "Stake the gas tank's native coin for fee resources it lends to deposits (TRON: Stake 2.0 freezebalancev2 for ENERGY); once, then top up as sweeps grow",
  )
  .addOption(new Option('--network <network>', 'network').choices([...NETWORKS]).makeOptionMandatory())
  .addOption(new Option('--environment <env>', 'environment').choices([...ENVIRONMENTS]).makeOptionMandatory())
  .requiredOption('--trx <amount>', 'amount to stake in whole coins, e.g. 5000')
  .requiredOption(
    '--key-file <file>',
    'file holding the gas tank’s private key as hex (`-` reads stdin); read, never printed. Never pass a key on the command line',
  )
  .option('--json', 'print one JSON object')
  .action(async (o: { network: Network; environment: Environment; trx: string; keyFile: string; json?: boolean }) => {
    const config = loadConfig();
    if (!/^\d+$/.test(o.trx) || BigInt(o.trx) <= 0n) throw new Error('--trx must be a positive whole number');
    const key = readFileSync(o.keyFile === '-' ? 0 : o.keyFile, 'utf8')
      .trim()
      .replace(/^0x/, '');
    if (!/^[0-9a-fA-F]{64}$/.test(key)) throw new Error('--key-file must hold a 32-byte key as 64 hex characters');
    const overrides = devChainOverrides(config);
    const target = (await cliWatchedNetworks(config, overrides)).find((t) => t.environment === o.environment && t.network === o.network);
    if (!target) throw new Error(`${o.environment}:${o.network} has no RPC URLs configured`);
    const sweeps = target.adapter.sweeps;
    if (!sweeps?.signStake) throw new Error(`${o.network} gas tanks do not stake (nothing to lend on this chain)`);
    // the native coin has 6 decimals on TRON (sun); the only chain that stakes today
    const tx = await sweeps.signStake(Buffer.from(key, 'hex'), BigInt(o.trx) * 1_000_000n, {});
    await sweeps.broadcast(tx);
    let state = await sweeps.txState(tx, '');
    for (let i = 0; i < 60 && state.state !== 'included' && state.state !== 'dead'; i++) {
      await new Promise((r) => setTimeout(r, 1000));
      state = await sweeps.txState(tx, '');
    }
    await target.adapter.close();
    const ok = state.state === 'included' && state.success;
    print(
      !!o.json,
      { network: o.network, environment: o.environment, tx_hash: tx.txHash, state: state.state, success: ok },
      `${ok ? 'staked' : 'stake NOT confirmed'}: ${o.trx} on ${o.environment}:${o.network}, tx ${tx.txHash} (${state.state})`,
    );
    if (!ok) process.exitCode = 1;
  });

gasTankCommand
  .command('ledger-open')
  .description(
    "Open the gas tank's ledger: its balance now plus what it has spent so far becomes its opening funding; from then on `reconcile` holds its balance to funded − spent",
  )
  .addOption(new Option('--network <network>', 'network').choices([...NETWORKS]).makeOptionMandatory())
  .addOption(new Option('--environment <env>', 'environment').choices([...ENVIRONMENTS]).makeOptionMandatory())
  .option('--json', 'print one JSON object')
  .action(async (o: { network: Network; environment: Environment; json?: boolean }) => {
    await withApp(async (app, config) => {
      const target = (await cliWatchedNetworks(config, devChainOverrides(config))).find((t) => t.environment === o.environment && t.network === o.network);
      if (!target) throw new Error(`${o.environment}:${o.network} has no RPC URLs configured`);
      try {
        const em = app.orm.em.fork();
        const r = await app.reconciliation.tanks.open(em, target);
        const { recordAudit } = await import('../modules/audit/audit.service.js');
        await recordAudit(em, operatorContext(em, 'cli gas-tank ledger-open'), 'operator.gas_tank_ledger_recorded', {
          after: { network: o.network, environment: o.environment, kind: 'opening', amount: r.opening.toString() },
        });
        print(
          !!o.json,
          { address: r.address, balance: r.balance.toString(), opening: r.opening.toString() },
          `${o.environment}:${o.network} gas tank ${r.address}: ledger opened at ${r.opening} (balance ${r.balance} + spent so far)`,
        );
      } finally {
        await target.adapter.close();
      }
    });
  });

gasTankCommand
  .command('ledger-refill')
  .description('Record coin sent to the gas tank (negative: taken out), in native base units, so `reconcile` expects it')
  .addOption(new Option('--network <network>', 'network').choices([...NETWORKS]).makeOptionMandatory())
  .addOption(new Option('--environment <env>', 'environment').choices([...ENVIRONMENTS]).makeOptionMandatory())
  .requiredOption('--amount <base-units>', 'native base units (wei, sun, lamports), e.g. 1000000000000000000')
  .option('--tx <hash>', 'the transaction that moved it')
  .option('--json', 'print one JSON object')
  .action(async (o: { network: Network; environment: Environment; amount: string; tx?: string; json?: boolean }) => {
    if (!/^-?\d+$/.test(o.amount) || BigInt(o.amount) === 0n) throw new Error('--amount must be a non-zero whole number of base units');
    await withApp(async (app) => {
      const em = app.orm.em.fork();
      await app.reconciliation.tanks.refill(em, o.environment, o.network, BigInt(o.amount), o.tx ?? null, null);
      const { recordAudit } = await import('../modules/audit/audit.service.js');
      await recordAudit(em, operatorContext(em, 'cli gas-tank ledger-refill'), 'operator.gas_tank_ledger_recorded', {
        after: { network: o.network, environment: o.environment, kind: 'refill', amount: o.amount, tx: o.tx ?? null },
      });
      print(
        !!o.json,
        { network: o.network, environment: o.environment, amount: o.amount },
        `${o.environment}:${o.network} gas tank: refill of ${o.amount} recorded`,
      );
    });
  });

const secrets = program.command('secrets').description('Secrets at rest (docs/security.md "Keys at rest")');
secrets
  .command('reencrypt')
  .description(
    'After a MASTER_KEY rotation (old key in MASTER_KEY_PREVIOUS): re-wrap the data key under MASTER_KEY and re-seal under the data key every secret it does not seal yet; online, idempotent',
  )
  .option('--json', 'print JSON')
  .action(async (o: { json?: boolean }) => {
    const [{ reencryptSecrets }, { rewrapDataKeys }, { keyEncryptionKeys }] = await Promise.all([
      import('../common/secret-reencrypt.js'),
      import('../common/data-keys.js'),
      import('../common/key-encryption.js'),
    ]);
    await withApp(async (app, config) => {
      const em = app.orm.em.fork();
      const kek = keyEncryptionKeys(config).current.id;
      const rewrapped = await rewrapDataKeys(em, keyEncryptionKeys(config));
      const results = await reencryptSecrets(em, app.box);
      const total = results.reduce((n, r) => n + r.resealed, 0);
      const { recordAudit } = await import('../modules/audit/audit.service.js');
      await recordAudit(em, operatorContext(em, 'cli secrets reencrypt'), 'operator.secrets_reencrypted', {
        after: { kek, key: app.box.currentKid, rewrapped, resealed: total, tables: results },
      });
      print(
        !!o.json,
        { kek, key: app.box.currentKid, rewrapped, resealed: total, tables: results },
        [
          `data keys: ${rewrapped} re-wrapped under key-encryption key ${kek}`,
          ...results.map((r) => `${r.table}: ${r.resealed} re-sealed, ${r.current} already under data key ${app.box.currentKid}`),
          `Every data key is wrapped by ${kek} and every secret sealed under data key ${app.box.currentKid}: MASTER_KEY_PREVIOUS can be removed.`,
        ].join('\n'),
      );
    });
  });

const audit = program.command('audit').description('The audit trail (docs/security.md "Audit trail")');
audit
  .command('verify')
  .description('Walk every hash chain of the audit trail; exit 1 naming the first row edited, or missing before a row')
  .option('--merchant <id>', 'only this merchant’s chain')
  .option('--json', 'print one JSON object')
  .action(async (o: { merchant?: string; json?: boolean }) => {
    const { AuditService } = await import('../modules/audit/audit.service.js');
    await withApp(async (app) => {
      const r = await new AuditService().verify(app.orm.em.fork(), o.merchant ? { chain: o.merchant } : {});
      const human = r.fault
        ? `audit trail BROKEN at row ${r.fault.id} (chain ${r.fault.chain}, position ${r.fault.chainSeq}): ${r.fault.reason}`
        : `audit trail intact: ${r.rows} rows in ${r.chains} chain${r.chains === 1 ? '' : 's'}`;
      print(!!o.json, { ok: !r.fault, ...r }, human);
      if (r.fault) process.exitCode = 1;
    });
  });

program
  .command('config:docs')
  .description('Print the configuration table (markdown); docs:write puts it into docs/configuration.md')
  .action(() => void process.stdout.write(configMarkdownTable() + '\n'));

program
  .command('docs:write')
  .description('Rewrite the generated sections of docs/ (configuration, error codes, transition tables) from the code')
  .option('--root <dir>', 'repository root', '.')
  .action(async (o: { root: string }) => {
    const { writeGeneratedDocs } = await import('./docs.writer.js');
    const changed = writeGeneratedDocs(resolve(o.root));
    console.error(changed.length ? `updated ${changed.join(', ')}` : 'docs/ already up to date');
  });

program
  .command('schema:emit')
  .description('Write the GraphQL SDL to schema/schema.graphql')
  .option('--out <file>', 'output file', 'schema/schema.graphql')
  .action(async (o: { out: string }) => {
    const { buildGatewaySchema, printGatewaySchema } = await import('../graphql/schema.js');
    const sdl = printGatewaySchema(await buildGatewaySchema());
    const file = resolve(o.out);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, sdl);
    console.error(`wrote ${file}`);
  });

program
  .command('openapi:emit')
  .description("Write the REST API's OpenAPI document to schema/openapi.json")
  .option('--out <file>', 'output file', 'schema/openapi.json')
  .action(async (o: { out: string }) => {
    const { defaultOpenApiDocument, formatOpenApiDocument } = await import('../rest/openapi/openapi.emit.js');
    const file = resolve(o.out);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, formatOpenApiDocument(defaultOpenApiDocument()));
    console.error(`wrote ${file}`);
  });

program.parseAsync(process.argv).catch((err: unknown) => {
  if (err instanceof ConfigError) console.error(err.message);
  else if (isDomainError(err)) console.error(`error: ${err.code}: ${err.message}`);
  else console.error(`error: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
