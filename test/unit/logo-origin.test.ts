import { cspFor, pageLogo } from '../../src/checkout/checkout.page';
import { cspImageOrigin, logoUrl } from '../../src/modules/merchants/merchant.commands';

/**
 * The checkout's CSP allows exactly the logo's origin. WHATWG URL parsing gives
 * `https://*` as the origin of a logo at host `*`, which CSP reads as every https host; `;` and `,` in
 * a host would be CSP syntax. Only a DNS name or an IPv4 address is a logo host.
 */
describe('logo URL → one CSP image origin', () => {
  const hostile = [
    'https://*/logo.png',
    'https://*.shop.test/logo.png',
    'https://a;script-src/x.png',
    'https://a,b/x.png',
    "https://'self'/x.png",
    'https://[::1]/x.png',
    'https://a..b/x.png',
    'https://-a.test/x.png',
  ];

  it.each(hostile)('%s is refused by the settings command and adds no source to the CSP', (url) => {
    expect(logoUrl.safeParse(url).success).toBe(false);
    expect(cspImageOrigin(url)).toBeNull();
    expect(cspFor(url)).toContain("img-src 'self' data:;");
    expect(pageLogo(url, 'sandbox')).toBeNull();
  });

  it.each([
    ['https://cdn.shop.test/logo.png', 'https://cdn.shop.test'],
    ['https://CDN.Shop.Test:8443/a/b.svg', 'https://cdn.shop.test:8443'],
    ['http://127.0.0.1:8080/brand.svg', 'http://127.0.0.1:8080'],
    ['https://bücher.example/logo.png', 'https://xn--bcher-kva.example'],
  ])('%s passes with the CSP source %s', (url, origin) => {
    expect(logoUrl.safeParse(url).success).toBe(true);
    expect(cspImageOrigin(url)).toBe(origin);
    expect(cspFor(url)).toContain(`img-src 'self' data: ${origin};`);
  });
});
