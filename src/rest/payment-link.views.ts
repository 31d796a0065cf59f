import { unix } from '../common/time.js';
import { paymentLinkState, type PaymentLink } from '../modules/payment-links/payment-link.entity.js';

/** The spec's payment link record (dashboard REST), plus products, validity, the return URLs its orders inherit, and timestamps. */
export function paymentLinkView(link: PaymentLink, url: string, now = new Date()) {
  const { status, remaining } = paymentLinkState(link, now);
  return {
    payment_link_id: link.id,
    merchant_id: link.merchant.id,
    environment: link.environment,
    title: link.title,
    link: url,
    products: link.products,
    total_price: link.totalPrice.toString(),
    currency: link.currency,
    status,
    usage_count: link.usageCount,
    max_usage: link.maxUsage,
    remaining,
    expiration_time: link.expirationTime,
    success_url: link.successUrl,
    cancel_url: link.cancelUrl,
    auto_redirect: link.autoRedirect,
    expired_at: unix(link.expiresAt),
    created_at: unix(link.createdAt),
    updated_at: unix(link.updatedAt),
  };
}

/** `GET /payment-links/{id}/validate`: what the checkout page needs before it opens the link. */
export function paymentLinkValidationView(link: PaymentLink, now = new Date()) {
  const { status, remaining, valid, unusable } = paymentLinkState(link, now);
  return {
    payment_link_id: link.id,
    status,
    valid,
    // why it cannot be opened: inactive, expired or exhausted (null when valid)
    unusable,
    title: link.title,
    products: link.products,
    total_price: link.totalPrice.toString(),
    currency: link.currency,
    remaining,
    usage_count: link.usageCount,
    max_usage: link.maxUsage,
    expired_at: unix(link.expiresAt),
  };
}
