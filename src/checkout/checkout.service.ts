import type { EntityManager } from '@mikro-orm/postgresql';
import type { App } from '../app.js';
import { driverFor, explorerTxUrl, networkDisplayName, networkProfile } from '../chains/registry.js';
import { ENV_PATH, type Network, type WalletType } from '../common/environment.js';
import { formatDecimal } from '../common/money.js';
import { Deposit } from '../modules/deposits/deposit.entity.js';
import { renderQrSvg } from '../modules/deposits/qr-image.js';
import type { CheckoutCaller } from '../modules/orders/checkout-key.service.js';
import { Order } from '../modules/orders/order.entity.js';
import { Payment } from '../modules/payments/payment.entity.js';
import { PaymentLink } from '../modules/payment-links/payment-link.entity.js';

const unix = (d: Date | null) => (d ? Math.floor(d.getTime() / 1000) : null);

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
 * What the hosted checkout page shows, read for the holder of the order's checkout key: the order,
 * the merchant's display name, each deposit with what was received and what remains (and a QR for
 * exactly that), each transfer with its confirmations. A read model for the page only: it decides
 * nothing (settlement does) and writes nothing.
 */
export class CheckoutService {
  constructor(private readonly app: App) {}

  /** The key's caller, accepted after the key's own expiry through the order's late window (reads only). */
  authenticateForStatus(em: EntityManager, key: string): Promise<CheckoutCaller> {
    return this.app.checkoutKeys.authenticate(em, key, this.app.config.LATE_PAYMENT_WINDOW_S);
  }

  /** What the page's shell shows before its script runs: the merchant's name and logo setting, the order number. */
  async shell(em: EntityManager, caller: CheckoutCaller): Promise<{ merchant: string; orderNo: string; logoUrl: string | null }> {
    const order = await em.findOneOrFail(Order, caller.orderId, { populate: ['merchant'] });
    return { merchant: order.merchant.name, orderNo: order.orderNo, logoUrl: order.merchant.settings.logoUrl ?? null };
  }

  /** The read model of one order (the page's state read, the printable receipt, the customer's mails). */
  async state(em: EntityManager, orderId: string) {
    const { config } = this.app;
    const order = await em.findOneOrFail(Order, orderId, { populate: ['merchant'] });
    const deposits = await em.find(Deposit, { order: order.id }, { populate: ['token', 'quote'], orderBy: { createdAt: 'asc' } });
    const payments = await em.find(Payment, { order: order.id }, { populate: ['token'], orderBy: { detectedAt: 'asc' } });
    const heads = new Map<string, bigint>();
    for (const r of await em.execute<{ network: string; block_number: string }[]>(`select network, block_number::text from chain_cursors where environment = ?`, [order.environment])) {
      heads.set(r.network, BigInt(r.block_number));
    }
    const needed = (n: Network) => config[`${order.environment === 'production' ? 'PRODUCTION' : 'SANDBOX'}_${n}_CONFIRMATIONS` as const] as number;
    const link = order.paymentLinkId ? await em.findOne(PaymentLink, order.paymentLinkId) : null;
    // Before a deposit exists the page offers the tokens, each with the wallets that can pay it.
    const choices = deposits.length
      ? []
      : (await this.app.tokens.listActive(em, order.environment)).map((t) => ({
          symbol: t.symbol,
          network: t.network,
          network_name: networkDisplayName(t.network),
          token_address: t.address,
          wallets: walletsFor(t, networkProfile(order.environment, t.network, config.DEV_CHAINS).chainId),
        }));

    const depositViews = await Promise.all(
      deposits.map(async (d) => {
        const dec = d.token.decimals;
        const pending = payments.filter((p) => p.deposit.id === d.id && p.status === 'pending').reduce((s, p) => s + p.amount, 0n);
        const remaining = d.totalAmount > d.amountReceived ? d.totalAmount - d.amountReceived : 0n;
        const chainId = networkProfile(order.environment, d.network, config.DEV_CHAINS).chainId;
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
        const wallets = [d.walletType, ...WALLETS.filter((w) => w !== d.walletType)].map((w) => ({ wallet: w, uri: uri(w) })).filter(
          (w, i, all): w is { wallet: WalletType; uri: string } => w.uri !== null && all.findIndex((o) => o.uri === w.uri) === i,
        );
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
        late_until: unix(new Date(order.expiresAt.getTime() + config.LATE_PAYMENT_WINDOW_S * 1000)),
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
        const head = heads.get(p.network);
        const depth = p.status === 'confirmed' ? needed(p.network) : head !== undefined && head >= BigInt(p.blockNumber) ? Number(head - BigInt(p.blockNumber)) + 1 : 0;
        return {
          network: p.network,
          network_name: networkDisplayName(p.network),
          token_symbol: p.token.symbol,
          tx_hash: p.txHash,
          amount: formatDecimal(p.amount, p.token.decimals),
          status: p.status,
          late: p.late,
          confirmations: Math.min(depth, needed(p.network)),
          confirmations_needed: needed(p.network),
          explorer_url: explorerTxUrl(order.environment, p.network, p.txHash, config.DEV_CHAINS),
          detected_at: unix(p.detectedAt),
          confirmed_at: unix(p.confirmedAt),
        };
      }),
      now: unix(new Date()),
    };
  }
}

export type CheckoutState = Awaited<ReturnType<CheckoutService['state']>>;
