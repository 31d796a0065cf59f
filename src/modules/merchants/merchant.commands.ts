import { z } from 'zod';
import { parseCidr } from '../../common/ip.js';
import { ENVIRONMENTS } from '../../common/environment.js';

export const email = z
  .string()
  .trim()
  .max(254)
  .pipe(z.email({ message: 'must be a valid email address' }))
  .transform((s) => s.toLowerCase());
export const password = z.string().min(8, 'must be at least 8 characters').max(256, 'must be at most 256 characters');

export const createMerchantCommand = z.object({
  name: z.string().trim().min(1).max(200),
  email,
  password,
  platformFeePercent: z
    .string()
    .regex(/^\d{1,2}(\.\d{1,4})?$/, 'must be a percent between 0 and 99.9999')
    .optional(),
  feeIncluded: z.boolean().optional(),
});
export type CreateMerchantCommand = z.input<typeof createMerchantCommand>;

/** Dashboard sign-in (AuthService). Credentials are checked, not shaped: any wrong value is simply INVALID_CREDENTIALS. */
export const loginEmail = z.string().max(254);
export const loginPassword = z.string().max(256);
export const loginCommand = z.object({ email: loginEmail, password: loginPassword });
export type LoginCommand = z.input<typeof loginCommand>;

export const refreshTokenField = z.string().min(1).max(512);
export const refreshCommand = z.object({ refreshToken: refreshTokenField });
export type RefreshCommand = z.input<typeof refreshCommand>;

export const environmentInput = z.enum(ENVIRONMENTS);

/** One DNS label: letters, digits and inner hyphens (WHATWG URL has already lower-cased it and turned IDN into punycode). */
const DNS_HOST = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/;

/**
 * The origin of an http(s) URL as a CSP source that allows exactly that host, or null when the host
 * is anything else. WHATWG URL parsing accepts hosts CSP reads as more than one host or as syntax:
 * a logo at host `*` (`https://` + `*` + `/logo.png`) has the origin `https://*` (a wildcard: every https host), and `;` or `,` in
 * a host would end the directive or the policy. Only a DNS name or an IPv4 address passes.
 */
export function cspImageOrigin(url: string): string | null {
  let p: URL;
  try {
    p = new URL(url);
  } catch {
    return null;
  }
  if (p.protocol !== 'https:' && p.protocol !== 'http:') return null;
  return DNS_HOST.test(p.hostname) ? p.origin : null;
}

/** Longest logo URL accepted: a logo is an image address, not a data blob. */
export const LOGO_URL_MAX = 512;

/**
 * The merchant's logo for the hosted checkout header: an absolute http(s) URL without credentials.
 * The checkout's CSP allows exactly this URL's origin as an image source on that merchant's pages, so
 * nothing else external can load. https is required when the gateway runs in production (checked by
 * MerchantService, which knows the deployment); null removes the logo.
 */
export const logoUrl = z
  .url({ protocol: /^https?$/, message: 'must be an http(s) URL' })
  .max(LOGO_URL_MAX, `must be at most ${LOGO_URL_MAX} characters`)
  .refine((u) => {
    const p = new URL(u);
    return !p.username && !p.password;
  }, 'must not carry a user name or password')
  .refine((u) => cspImageOrigin(u) !== null, 'must name one host (a DNS name or an IPv4 address; no wildcard or other special character)')
  .nullable()
  .optional();

/** What a merchant's owner or admin may change from the dashboard. */
export const updateMerchantSettingsCommand = z.object({
  feeIncluded: z.boolean().optional(),
  orderTtlSeconds: z
    .number()
    .int()
    .min(60)
    .max(7 * 86400)
    .nullable()
    .optional(),
  /** Under-payment accepted as paid, in basis points of the amount due (0–500 = up to 5 %). */
  paymentToleranceBps: z.number().int().min(0).max(500).optional(),
  logoUrl,
});

export type UpdateMerchantSettingsCommand = z.input<typeof updateMerchantSettingsCommand>;

/** Operator-only: the platform fee percent ("set by an administrator per merchant"). */
export const platformFeeInput = z.string().regex(/^\d{1,2}(\.\d{1,4})?$/, 'must be a percent between 0 and 99.9999');

/** One allowlist entry: an IPv4 or IPv6 address, or a CIDR block of one (`10.0.0.0/8`, `2001:db8::/32`). */
const cidr = z
  .string()
  .trim()
  .max(64)
  .refine((v) => parseCidr(v) !== null, { message: 'must be an IP address or a CIDR block (10.0.0.0/8, 2001:db8::/32)' });

export const setIpAllowlistInput = z.object({
  environment: environmentInput,
  /** Empty or null: the key works from any address. */
  cidrs: z.array(cidr).max(50, 'at most 50 entries').nullable(),
});
export type SetIpAllowlistCommand = z.input<typeof setIpAllowlistInput>;
