import type { EntityManager } from '@mikro-orm/postgresql';
import { driverFor, explorerTxUrl, networkDisplayName, networkProfile } from '../../chains/registry.js';
import { ENV_PATH, type Environment, type Network, type WalletType } from '../../common/environment.js';
import { formatDecimal } from '../../common/money.js';
import { unix } from '../../common/time.js';
import { Deposit } from '../deposits/deposit.entity.js';
import { renderQrSvg } from '../deposits/qr-image.js';
import type { NetworkCatalog } from '../networks/network-catalog.service.js';
import type { CheckoutCaller, CheckoutKeyService } from '../orders/checkout-key.service.js';
import { Order } from '../orders/order.entity.js';
import { scannedBlocks } from '../payments/chain-cursor.store.js';
import { Payment } from '../payments/payment.entity.js';
import { PaymentLink } from '../payment-links/payment-link.entity.js';
import type { TokenService } from '../tokens/token.service.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const WALLETS: readonly WalletType[] = ['METAMASK', 'TRUSTWALLET', 'PHANTOM', 'WALLETCONNECT'];

/**
 * The wallet applications that can pay `token` on its network, in the page's order: the ones whose
 * driver builds a payment request (the same check `pgqr/fiat/create` makes before allocating), so the
 * shopper is only offered wallets the server will accept.
 */
export function walletsFor(token: { network: Network; address: string; decimals: number; symbol: string }, chainId: number | undefined): WalletType[] {
  return WALLETS.filter((w) => {
    try {
      driverFor(token.network).paymentUri(w, token.network, { token, to: token.address, amount: 1n, chainId });
      return true;
    } catch {
      return false;
    }
  });
}

/**
 * Where "Return to <merchant>" and the automatic redirect go: the merchant's URL with the order named
 * in its query (`order_no`, and the `status` the shopper saw, a hint: the merchant's server confirms it
 * with getOrder or the webhook). Parameters of the merchant's own are kept.
 */
export function returnUrlFor(url: string | null, orderNo: string, status: string): string | null {
  if (!url || !URL.canParse(url)) return null;
  const u = new URL(url);
  u.searchParams.set('order_no', orderNo);
  u.searchParams.set('status', status);
  return u.toString();
}

/**
 * Confirmations a payment shows: all it needs once confirmed; otherwise the blocks from its own up to
 * the watcher's scanned head (its own block counts as one), 0 when the head is unknown or behind it;
 * never more than it needs.
 */
export function paymentConfirmations(p: { status: string; blockNumber: bigint | number | string }, head: bigint | undefined, needed: number): number {
  if (p.status === 'confirmed') return needed;
  const block = BigInt(p.blockNumber);
  const depth = head !== undefined && head >= block ? Number(head - block) + 1 : 0;
  return Math.min(depth, needed);
}

export interface CheckoutViewOptions {
  checkoutKeys: CheckoutKeyService;
  tokens: TokenService;
  networks: Pick<NetworkCatalog, 'confirmations'>;
  /** LATE_PAYMENT_WINDOW_S: how long after expiry a payment still counts (and the page still reads). */
  lateWindowS: number;
  /** DEV_CHAINS: sandbox EVM networks run on local chains (chain ids, no explorer links). */
  devChains: boolean;
}

/**
 * What the hosted checkout page shows, read for the holder of the order's checkout key: the order,
 * the merchant's display name, each deposit with what was received and what remains (and a QR for
 * exactly that), each transfer with its confirmations. A read model for the page (and the customer's
 * receipt mails) only: it decides nothing (settlement does) and writes nothing.
 */
export class CheckoutViewService {
  constructor(private readonly opts: CheckoutViewOptions) {}

  /** The key's caller, accepted after the key's own expiry through the order's late window (reads only). */
  authenticateForStatus(em: EntityManager, key: string): Promise<CheckoutCaller> {
    return this.opts.checkoutKeys.authenticate(em, key, this.opts.lateWindowS);
  }

  /** What a payment link's page shell shows; null for an unknown or malformed id. */
  async linkShell(
    em: EntityManager,
    id: string,
  ): Promise<{ id: string; environment: Environment; title: string; merchant: string; logoUrl: string | null } | null> {
    const link = UUID.test(id) ? await em.findOne(PaymentLink, id, { populate: ['merchant'] }) : null;
    return (
      link && { id: link.id, environment: link.environment, title: link.title, merchant: link.merchant.name, logoUrl: link.merchant.settings.logoUrl ?? null }
    );
  }

  /** What the page's shell shows before its script runs: the merchant's name and logo setting, the order number. */
  async shell(em: EntityManager, caller: CheckoutCaller): Promise<{ merchant: string; orderNo: string; logoUrl: string | null }> {
    const order = await em.findOneOrFail(Order, caller.orderId, { populate: ['merchant'] });
    return { merchant: order.merchant.name, orderNo: order.orderNo, logoUrl: order.merchant.settings.logoUrl ?? null };
  }

  /** The read model of one order (the page's state read, the printable receipt, the customer's mails). */
  async state(em: EntityManager, orderId: string) {
    const { lateWindowS, devChains } = this.opts;
    const order = await em.findOneOrFail(Order, orderId, { populate: ['merchant'] });
    const deposits = await em.find(Deposit, { order: order.id }, { populate: ['token', 'quote'], orderBy: { createdAt: 'asc' } });
    const payments = await em.find(Payment, { order: order.id }, { populate: ['token'], orderBy: { detectedAt: 'asc' } });
    const heads = await scannedBlocks(em, order.environment);
    const needed = (n: Network) => this.opts.networks.confirmations(order.environment, n);
    const link = order.paymentLinkId ? await em.findOne(PaymentLink, order.paymentLinkId) : null;
    // Before a deposit exists the page offers the tokens, each with the wallets that can pay it.
    const choices = deposits.length
      ? []
      : (await this.opts.tokens.listActive(em, order.environment)).map((t) => ({
          symbol: t.symbol,
          network: t.network,
          network_name: networkDisplayName(t.network),
          token_address: t.address,
          wallets: walletsFor(t, networkProfile(order.environment, t.network, devChains).chainId),
        }));

    const depositViews = await Promise.all(
      deposits.map(async (d) => {
        const dec = d.token.decimals;
        const pending = payments.filter((p) => p.deposit.id === d.id && p.status === 'pending').reduce((s, p) => s + p.amount, 0n);
        const remaining = d.totalAmount > d.amountReceived ? d.totalAmount - d.amountReceived : 0n;
        const chainId = networkProfile(order.environment, d.network, devChains).chainId;
        // Once something arrived, the QR asks for the remainder only: scanning the original would pay twice.
        const qrAmount = remaining > 0n ? remaining : d.totalAmount;
        const uri = (w: WalletType) => {
          try {
            return driverFor(d.network).paymentUri(w, d.network, { token: d.token, to: d.address, amount: qrAmount, chainId, label: `Order ${order.orderNo}` });
          } catch {
            return null; // a wallet that cannot pay on this network gets no button
          }
        };
        // WalletConnect gets the same EIP-681 URI as MetaMask: one button per distinct link.
        // The wallet the shopper chose comes first.
        const wallets = [d.walletType, ...WALLETS.filter((w) => w !== d.walletType)]
          .map((w) => ({ wallet: w, uri: uri(w) }))
          .filter((w, i, all): w is { wallet: WalletType; uri: string } => w.uri !== null && all.findIndex((o) => o.uri === w.uri) === i);
        const qrValue = uri(d.walletType) ?? wallets[0]?.uri ?? d.address;
        return {
          id: d.id,
          network: d.network,
          network_name: networkDisplayName(d.network),
          token_symbol: d.token.symbol,
          token_address: d.token.address,
          wallet_type: d.walletType,
          address: d.address,
          unique_code: String(d.uniqueCode).padStart(3, '0'),
          unique_code_amount: formatDecimal(d.uniqueCodeAmount, dec),
          total_amount: formatDecimal(d.totalAmount, dec),
          total_amount_fiat: d.totalAmountFiat.toString(),
          // What the IDR equivalent is made of: order amount + fee (when the buyer bears it) + the code's value.
          fee_added_idr: (d.quote.totalIdr - order.amount).toString(),
          unique_code_idr: (d.totalAmountFiat - d.quote.totalIdr).toString(),
          received: formatDecimal(d.amountReceived, dec),
          pending: formatDecimal(pending, dec),
          remaining: formatDecimal(remaining, dec),
          rate: d.quote.cryptoRate,
          fee_idr: d.quote.feeAmountIdr.toString(),
          fee_crypto: formatDecimal(d.quote.feeAmountCrypto, dec),
          fee_included: d.quote.feeIncluded,
          qr_value: qrValue,
          qr_svg: await renderQrSvg(qrValue, { margin: 2 }),
          qr_amount: formatDecimal(qrAmount, dec),
          wallets,
          status: d.status,
        };
      }),
    );

    return {
      environment: ENV_PATH[order.environment],
      merchant: { name: order.merchant.name },
      order: {
        order_no: order.orderNo,
        merchant_id: order.merchant.id,
        amount: order.amount.toString(),
        currency: order.currency,
        status: order.status,
        name: order.customerName,
        overpaid: order.overpaid,
        created_at: unix(order.createdAt),
        expired_at: unix(order.expiresAt),
        paid_at: unix(order.paidAt),
        late_until: unix(new Date(order.expiresAt.getTime() + lateWindowS * 1000)),
        success_url: order.successUrl,
        cancel_url: order.cancelUrl,
        auto_redirect: order.autoRedirect,
        /** The way back for the status now: success_url after payment, cancel_url otherwise, naming the order. */
        return_url: returnUrlFor(order.status === 'Success' ? order.successUrl : order.cancelUrl, order.orderNo, order.status),
      },
      link: link ? { title: link.title } : null,
      choices,
      deposits: depositViews,
      payments: payments.map((p) => {
        return {
          network: p.network,
          network_name: networkDisplayName(p.network),
          token_symbol: p.token.symbol,
          tx_hash: p.txHash,
          amount: formatDecimal(p.amount, p.token.decimals),
          status: p.status,
          late: p.late,
          confirmations: paymentConfirmations(p, heads.get(p.network), needed(p.network)),
          confirmations_needed: needed(p.network),
          explorer_url: explorerTxUrl(order.environment, p.network, p.txHash, devChains),
          detected_at: unix(p.detectedAt),
          confirmed_at: unix(p.confirmedAt),
        };
      }),
      now: unix(new Date()),
    };
  }
}

export type CheckoutState = Awaited<ReturnType<CheckoutViewService['state']>>;
