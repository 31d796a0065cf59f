import { z } from 'zod';
import { requireDashboard, requireEnvironment } from '../common/access.js';
import type { RequestContext } from '../common/context.js';
import { unix } from '../common/time.js';
import { parseInput } from '../common/validation.js';
import type { ListSettlementWalletsCommand, SetSettlementWalletCommand } from '../modules/settlement-wallets/settlement-wallet.commands.js';
import type { SettlementWalletRecord, SettlementWalletState } from '../modules/settlement-wallets/settlement-wallet.service.js';

/*
 * The REST dialect of settlement wallets (snake_case, Unix seconds) → SettlementWalletService's
 * commands, which validate the values themselves (network, address, password) for every transport.
 */

export const setSettlementWalletBody = z.object({
  address: z.string({ message: 'must be the settlement address (string)' }),
  password: z.string({ message: 'is required: changing a settlement address needs the account password' }),
});

/** The `:network` path segment, in any case (`tron`, `TRON`). */
const networkParam = (params: unknown): string => String((params as { network?: unknown } | undefined)?.network ?? '').toUpperCase();

/** `PUT /merchant/settlement-wallets/:network` `{ address, password }`. */
export function toSetSettlementWallet(ctx: RequestContext, params: unknown, body: unknown): SetSettlementWalletCommand {
  requireDashboard(ctx, 'Settlement addresses are managed from the dashboard');
  const b = parseInput(setSettlementWalletBody, body ?? {});
  return {
    environment: requireEnvironment(ctx),
    network: networkParam(params) as SetSettlementWalletCommand['network'],
    address: b.address,
    password: b.password,
  };
}

/** `GET /merchant/settlement-wallets[/:network]`. */
export function toListSettlementWallets(ctx: RequestContext, params: unknown): ListSettlementWalletsCommand {
  requireDashboard(ctx, 'Settlement addresses are managed from the dashboard');
  const network = networkParam(params);
  return { environment: requireEnvironment(ctx), network: (network || undefined) as ListSettlementWalletsCommand['network'] };
}

const recordView = (r: SettlementWalletRecord) => ({
  settlement_wallet_id: r.id,
  address: r.address,
  active_from: unix(r.activeFrom),
  set_at: unix(r.setAt),
  set_by: r.setBy,
  replaced_at: unix(r.replacedAt),
});

export function settlementWalletView(s: SettlementWalletState) {
  return {
    environment: s.environment,
    network: s.network,
    current: s.current && recordView(s.current),
    pending: s.pending && recordView(s.pending),
    history: s.history.map(recordView),
  };
}
