import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import type { TransferWallet } from '../../chains/chain-adapter.js';
import { driverFor, familyOf, nativeAsset } from '../../chains/registry.js';
import { openTransferWallet, serialisedWallet } from '../../chains/transfer-wallet.js';
import type { RequestContext } from '../../common/context.js';
import { NETWORKS, type Network } from '../../common/environment.js';
import { DomainError } from '../../common/errors.js';
import { formatDecimal, parseDecimal } from '../../common/money.js';
import { parseInput } from '../../common/validation.js';
import type { Config } from '../../config/index.js';
import type { NetworkCatalog } from '../networks/network-catalog.service.js';
import type { TokenService } from '../tokens/token.service.js';

/** Config key of the native amount (gas) the faucet sends on each network. */
const NATIVE_AMOUNT: Record<Network, 'FAUCET_NATIVE_AMOUNT_EVM' | 'FAUCET_NATIVE_AMOUNT_TRON' | 'FAUCET_NATIVE_AMOUNT_SOLANA'> = {
  ETHEREUM: 'FAUCET_NATIVE_AMOUNT_EVM',
  BINANCE: 'FAUCET_NATIVE_AMOUNT_EVM',
  TRON: 'FAUCET_NATIVE_AMOUNT_TRON',
  SOLANA: 'FAUCET_NATIVE_AMOUNT_SOLANA',
};

/** The faucet wallet's keys: secp256k1 hex (EVM, TRON) and an ed25519 seed hex (SOLANA); empty = none. */
export interface FaucetKeys {
  secp256k1Evm: string;
  secp256k1Tron: string;
  solanaSeedHex: string;
}

const FaucetRequest = z.strictObject({
  address: z.string().min(1).max(128),
  network: z.enum(NETWORKS, { message: `network must be one of ${NETWORKS.join(', ')}` }),
  tokens: z
    .array(z.string().regex(/^[A-Za-z0-9]{1,16}$/, 'a token is a symbol such as USDT'))
    .min(1, 'ask for at least one token')
    .max(8)
    .refine((t) => new Set(t.map((s) => s.toUpperCase())).size === t.length, 'tokens must not repeat'),
});

export interface FaucetTransfer {
  token: string;
  amount: string;
  tx_hash: string;
}

export interface FaucetResult {
  address: string;
  network: Network;
  transfers: FaucetTransfer[];
  warnings: string[];
}

/**
 * The sandbox faucet: test tokens plus a little native gas, to any valid address on a watched sandbox
 * network. Limits (per address and network, per IP) are taken in PostgreSQL before anything is sent,
 * so concurrent requests for one address send one set. A grant is not returned when a transfer fails:
 * a retry could otherwise send twice what did land.
 */
export class FaucetService {
  private readonly wallets = new Map<Network, Promise<TransferWallet>>();
  private readonly keys: FaucetKeys;

  /** `devKeys`: the local dev chains' funded faucet keys (the runtime hands them in when DEV_CHAINS is on), the default where config names none. */
  constructor(
    private readonly config: Config,
    private readonly networks: NetworkCatalog,
    private readonly tokens: TokenService,
    devKeys?: FaucetKeys,
  ) {
    this.keys = {
      secp256k1Evm: config.FAUCET_EVM_PRIVATE_KEY ?? devKeys?.secp256k1Evm ?? '',
      secp256k1Tron: config.FAUCET_TRON_PRIVATE_KEY ?? devKeys?.secp256k1Tron ?? '',
      solanaSeedHex: config.FAUCET_SOLANA_SEED ?? devKeys?.solanaSeedHex ?? '',
    };
  }

  async request(ctx: RequestContext, input: unknown): Promise<FaucetResult> {
    if (ctx.environment !== 'sandbox') throw new DomainError('ROUTE_NOT_FOUND', 'The faucet exists only in the sandbox (/api/v2/testnet/faucet)');
    const req = parseInput(FaucetRequest, input);
    if (!this.networks.isWatched('sandbox', req.network)) {
      throw new DomainError('VALIDATION_FAILED', `${req.network} is not available in this sandbox; see /api/v2/testnet/networks`, {
        fields: { network: 'not watched' },
      });
    }
    const driver = driverFor(req.network);
    if (!driver.isValidAddress(req.address)) {
      throw new DomainError('VALIDATION_FAILED', `address is not a valid ${req.network} address`, {
        fields: { address: `not a valid ${familyOf(req.network).toUpperCase()} address` },
      });
    }
    const address = driver.normalizeAddress(req.address);
    // Every asked token is checked before the grant is taken: a typo (DAI) must not spend the address's window.
    const offered = await this.tokens.listActive(ctx.em, 'sandbox', req.network);
    const unknown = req.tokens.map((t) => t.toUpperCase()).filter((symbol) => !offered.some((t) => t.symbol === symbol));
    if (unknown.length) {
      const list = offered.map((t) => t.symbol).join(', ') || 'none';
      throw new DomainError(
        'VALIDATION_FAILED',
        `${unknown.join(', ')} ${unknown.length > 1 ? 'are' : 'is'} not offered on ${req.network} in the sandbox (offered: ${list}); nothing was sent`,
        {
          fields: { tokens: `not offered: ${unknown.join(', ')}` },
        },
      );
    }
    const wallet = await this.wallet(req.network);
    await this.takeGrant(ctx.em, req.network, address, ctx.ip);

    const warnings: string[] = [];
    const transfers: FaucetTransfer[] = [];
    const native = nativeAsset(req.network);
    const send = async (symbol: string, decimals: number, amountText: string, balance: () => Promise<bigint>, go: (units: bigint) => Promise<string>) => {
      const units = parseDecimal(amountText, decimals);
      try {
        const have = await balance();
        if (have < units) {
          warnings.push(`${symbol}: the faucet wallet runs low (${formatDecimal(have, decimals)} left); nothing sent`);
          return;
        }
        transfers.push({ token: symbol, amount: amountText, tx_hash: await go(units) });
      } catch (err) {
        warnings.push(`${symbol}: transfer failed (${err instanceof Error ? err.message.slice(0, 200) : 'unknown error'})`);
      }
    };
    await send(
      native.symbol,
      native.decimals,
      this.config[NATIVE_AMOUNT[req.network]],
      () => wallet.nativeBalance(),
      (u) => wallet.sendNative(address, u),
    );
    for (const asked of req.tokens) {
      const symbol = asked.toUpperCase();
      const token = offered.find((t) => t.symbol === symbol)!; // checked above
      const t = { address: token.address, decimals: token.decimals };
      await send(
        symbol,
        token.decimals,
        this.config.FAUCET_TOKEN_AMOUNT,
        () => wallet.tokenBalance(t),
        (u) => wallet.sendToken(t, address, u),
      );
    }
    return { address, network: req.network, transfers, warnings };
  }

  /**
   * Records the grant, or refuses with 429 and the seconds until one is free. Advisory locks on the
   * address and the IP (always in that order) make check-and-insert atomic across processes.
   */
  private async takeGrant(em: EntityManager, network: Network, address: string, ip: string): Promise<void> {
    const windowS = this.config.FAUCET_ADDRESS_WINDOW_S;
    const perHour = this.config.FAUCET_IP_PER_HOUR;
    await em.transactional(async (tx) => {
      await tx.execute(`select pg_advisory_xact_lock(hashtext('faucet:addr:' || ?)), pg_advisory_xact_lock(hashtext('faucet:ip:' || ?))`, [
        `${network}:${address}`,
        ip,
      ]);
      const [byAddress] = await tx.execute<{ wait_s: string | null }[]>(
        `select ceil(extract(epoch from max(created_at) + make_interval(secs => ?) - now()))::bigint as wait_s
           from faucet_grants where network = ? and address = ? and created_at > now() - make_interval(secs => ?)`,
        [windowS, network, address, windowS],
      );
      if (byAddress?.wait_s !== null && byAddress?.wait_s !== undefined) {
        throw new DomainError('RATE_LIMITED', `This address already received test tokens on ${network}; try again later`, {
          retryAfterS: Math.max(1, Number(byAddress.wait_s)),
        });
      }
      const [byIp] = await tx.execute<{ n: string; wait_s: string | null }[]>(
        `select count(*) as n, ceil(extract(epoch from min(created_at) + interval '1 hour' - now()))::bigint as wait_s
           from faucet_grants where ip = ? and created_at > now() - interval '1 hour'`,
        [ip],
      );
      if (Number(byIp?.n ?? 0) >= perHour) {
        throw new DomainError('RATE_LIMITED', `At most ${perHour} faucet requests per hour from one IP; try again later`, {
          retryAfterS: Math.max(1, Number(byIp?.wait_s ?? 1)),
        });
      }
      await tx.execute('insert into faucet_grants (network, address, ip) values (?, ?, ?)', [network, address, ip]);
    });
  }

  /** The faucet wallet on `network`, opened once (its sends serialised: one key, one nonce sequence, one fee payer). */
  private async wallet(network: Network): Promise<TransferWallet> {
    let w = this.wallets.get(network);
    if (!w) {
      const rpcUrl = this.networks.rpcUrls('sandbox', network)[0];
      const key = { evm: this.keys.secp256k1Evm, tron: this.keys.secp256k1Tron, solana: this.keys.solanaSeedHex }[familyOf(network)];
      if (!rpcUrl || !key)
        throw new DomainError(
          'SERVICE_UNAVAILABLE',
          `The faucet has no wallet or RPC endpoint on ${network} (set the FAUCET_* key and SANDBOX_${network}_RPC_URLS)`,
        );
      w = openTransferWallet(network, { rpcUrl, key, timeoutMs: this.config.RPC_TIMEOUT_MS * 3 }).then(serialisedWallet);
      this.wallets.set(network, w);
      // a failed open (a bad key) is not kept: the next request tries again
      w.catch(() => this.wallets.get(network) === w && this.wallets.delete(network));
    }
    return w;
  }
}
