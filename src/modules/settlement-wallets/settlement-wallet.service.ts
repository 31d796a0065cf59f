import { recordAudit } from '../audit/audit.service.js';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Logger } from 'pino';
import { requirePermission } from '../../common/access.js';
import type { RequestContext } from '../../common/context.js';
import { sha256Hex } from '../../common/crypto.js';
import { NETWORKS, type Environment, type Network } from '../../common/environment.js';
import { DomainError } from '../../common/errors.js';
import { parseInput } from '../../common/validation.js';
import { driverFor, familyOf } from '../../chains/registry.js';
import { SETTLEMENT_WALLET_CHANGED } from '../events/event.catalogue.js';
import type { MerchantEventWriter } from '../events/merchant-event.writer.js';
import { DashboardUser } from '../merchants/dashboard-user.entity.js';
import { verifyPassword } from '../merchants/password.js';
import {
  listSettlementWalletsInput,
  setSettlementWalletInput,
  type ListSettlementWalletsCommand,
  type SetSettlementWalletCommand,
} from './settlement-wallet.commands.js';
import { SettlementWalletStore, type ActiveSettlementWallet, type SettlementWalletRow } from './settlement-wallet.store.js';

/** One row of the history: an address set by someone at some time. */
export interface SettlementWalletRecord extends ActiveSettlementWallet {
  setAt: Date;
  /** Email of the dashboard user who set it (null if that user was deleted). */
  setBy: string | null;
  /** When a later change replaced it (null: the latest). */
  replacedAt: Date | null;
}

/** The settlement setting of one network: the address sweeps go to now, the one waiting for its hold, and every change. */
export interface SettlementWalletState {
  environment: Environment;
  network: Network;
  current: SettlementWalletRecord | null;
  pending: SettlementWalletRecord | null;
  /** Newest first. */
  history: SettlementWalletRecord[];
}

/** Addresses of a network that may never be a settlement address (the sweep engine's gas tanks), in every environment. */
export type ReservedAddresses = (network: Network) => Promise<readonly string[]> | readonly string[];

export interface SettlementWalletOptions {
  /** SETTLEMENT_HOLD_SECONDS_* per environment. */
  holdSeconds: Record<Environment, number>;
  events: MerchantEventWriter;
  /** The login's per-account limiter (a wrong password here counts as a login guess). */
  throttleAccount: (accountHash: string) => Promise<void>;
  log: Pick<Logger, 'info'>;
}

const record = (r: SettlementWalletRow): SettlementWalletRecord => ({
  id: r.id,
  address: r.address,
  activeFrom: r.active_from,
  setAt: r.created_at,
  setBy: r.set_by,
  replacedAt: r.replaced_at,
});

/**
 * Settlement wallets: one address per merchant, environment and network, where the sweep
 * engine sends paid deposits. A change never updates an address: the latest row gets `replaced_at`
 * and a new row is inserted (the history). A new address is active from `now + hold`
 * (SETTLEMENT_HOLD_SECONDS_*); until then sweeps keep going to the previously active one. Changing it
 * needs the owner's session and password again, and sends `settlement_wallet.changed` in the same
 * transaction (docs/security.md "Settlement addresses").
 */
export class SettlementWalletService {
  private readonly reserved: ReservedAddresses[] = [];
  private readonly store = new SettlementWalletStore();

  constructor(private readonly opts: SettlementWalletOptions) {}

  /** Adds a source of addresses refused as settlement addresses (the sweep engine's gas tanks). */
  reserveAddresses(source: ReservedAddresses): void {
    this.reserved.push(source);
  }

  /**
   * The address sweeps of (merchant, environment, network) go to now, or null when none is active
   * (never set, or the first one still in its hold). During the hold after a change this is the
   * previous address. Read in `em`'s transaction (`now()` is its start time) through the store's one
   * definition of the current wallet (settlement-wallet.store.ts), which the sweep engine's planning
   * joins too.
   */
  current(em: EntityManager, merchantId: string, environment: Environment, network: Network): Promise<ActiveSettlementWallet | null> {
    return this.store.current(em, merchantId, environment, network);
  }

  /** The settings of the caller's merchant in an environment: every network, or the one named. */
  async list(ctx: RequestContext, cmd: ListSettlementWalletsCommand): Promise<SettlementWalletState[]> {
    const merchantId = requirePermission(ctx, 'settlement.read').merchantId;
    const { environment, network } = parseInput(listSettlementWalletsInput, cmd);
    const networks = network ? [network] : [...NETWORKS];
    return Promise.all(networks.map((n) => this.state(ctx.em, merchantId, environment, n)));
  }

  /**
   * Sets the settlement address of a network (owner only, with the account password). The same
   * address as the latest one is a no-op (`changed: false`, no event); the address active now cancels
   * a pending change at once (no hold: sweeps already go there); any other starts a new hold,
   * replacing a pending one.
   */
  async set(ctx: RequestContext, cmd: SetSettlementWalletCommand): Promise<{ state: SettlementWalletState; changed: boolean }> {
    const caller = requirePermission(ctx, 'settlement.manage');
    const input = parseInput(setSettlementWalletInput, cmd);
    const { environment, network } = input;
    const checked = driverFor(network).checkSettlementAddress(input.address);
    if (!checked.ok)
      throw new DomainError('INVALID_SETTLEMENT_ADDRESS', `Invalid ${network} settlement address: ${checked.reason}`, { network, field: 'address' });
    const address = checked.address;

    const user = await ctx.em.findOne(DashboardUser, { id: caller.userId });
    await this.opts.throttleAccount(sha256Hex(user?.email ?? caller.userId));
    if (!(await verifyPassword(user?.passwordHash ?? null, input.password)) || !user) throw new DomainError('INVALID_PASSWORD', 'The password is not correct');

    await this.refuseGatewayAddress(ctx.em, network, address);

    const changed = await ctx.em.transactional(async (tx) => {
      // One change at a time per (merchant, environment, network): the current-row unique index would
      // refuse a racing insert anyway, but the loser should see the winner's row, not an error.
      await this.store.lockNetwork(tx, caller.merchantId, environment, network);
      const rows = await this.store.history(tx, caller.merchantId, environment, network);
      const latest = rows.find((r) => r.replaced_at === null) ?? null;
      if (latest?.address === address) return false;
      const active = rows.find((r) => r.current) ?? null;
      const holdS = active?.address === address ? 0 : this.opts.holdSeconds[environment];
      if (latest) await this.store.markReplaced(tx, latest.id);
      const inserted = await this.store.insert(tx, { merchantId: caller.merchantId, environment, network, address, holdS, userId: caller.userId });
      const pendingReplaced = latest && latest.id !== active?.id ? latest.address : null;
      await this.opts.events.record(tx, {
        merchantId: caller.merchantId,
        environment,
        type: SETTLEMENT_WALLET_CHANGED,
        payload: {
          settlementWalletId: inserted.id,
          network,
          previousAddress: active?.address ?? null,
          replacedPendingAddress: pendingReplaced,
          address,
          activeFrom: new Date(inserted.active_from).toISOString(),
          changedBy: { userId: user.id, email: user.email },
          at: new Date(inserted.created_at).toISOString(),
        },
        idempotencyKey: `${SETTLEMENT_WALLET_CHANGED}:${inserted.id}`,
      });
      await recordAudit(tx, ctx, 'settlement_wallet.changed', {
        subject: `${environment}:${network}`,
        before: { address: active?.address ?? null, pendingAddress: pendingReplaced },
        after: { environment, network, address, activeFrom: new Date(inserted.active_from) },
      });
      this.opts.log.info(
        {
          merchantId: caller.merchantId,
          environment,
          network,
          previousAddress: active?.address ?? null,
          replacedPendingAddress: pendingReplaced,
          address,
          activeFrom: inserted.active_from,
          userId: user.id,
          requestId: ctx.requestId,
        },
        'settlement wallet changed',
      );
      return true;
    });
    return { state: await this.state(ctx.em, caller.merchantId, environment, network), changed };
  }

  /** Refuses an address the gateway itself controls or that is not a wallet: a deposit address (any merchant, any environment), a token contract or mint, a gas tank. */
  private async refuseGatewayAddress(em: EntityManager, network: Network, address: string): Promise<void> {
    const driver = driverFor(network);
    const key = driver.addressKey(address);
    const family = familyOf(network);
    const familyNetworks = NETWORKS.filter((n) => familyOf(n) === family);
    const refuse = (what: string) => {
      throw new DomainError('SETTLEMENT_ADDRESS_REFUSED', `This address cannot be a settlement address: it is ${what}`, { network, field: 'address' });
    };
    // Deposits store the canonical form (unique per family); tokens are compared by key (EVM hex is case-insensitive).
    if (await this.store.isDepositAddress(em, family, address)) refuse('a deposit address of this gateway');
    const tokens = await this.store.tokenAddressesLike(em, familyNetworks, address);
    if (tokens.some((t) => driver.addressKey(t) === key)) refuse('a token contract (mint) address');
    for (const source of this.reserved) {
      for (const n of familyNetworks) {
        const list = await source(n);
        if (list.some((a) => driver.isValidAddress(a) && driver.addressKey(a) === key)) refuse('a gas tank address of this gateway');
      }
    }
  }

  private async state(em: EntityManager, merchantId: string, environment: Environment, network: Network): Promise<SettlementWalletState> {
    const rows = await this.store.history(em, merchantId, environment, network);
    const active = rows.find((r) => r.current) ?? null;
    const latest = rows.find((r) => r.replaced_at === null) ?? null;
    const pending = latest && latest.active_from > latest.now ? latest : null;
    return { environment, network, current: active && record(active), pending: pending && record(pending), history: rows.map(record) };
  }
}
