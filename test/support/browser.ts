/**
 * A real Chromium for the checkout tests, driven by playwright-core: Debian's `/usr/bin/chromium` when
 * present, else the binary shipped inside the `@sparticuz/chromium` npm package. Never a silent skip:
 * no browser is a failure with a message.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';

const ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** `@sparticuz/chromium` is an ES module that unpacks its binary on first use: ask it from a child node. */
function packagedChromium(): string {
  const script = "import c from '@sparticuz/chromium'; process.stdout.write(await c.executablePath());";
  return execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 120_000 }).trim();
}

export function chromiumPath(): string {
  if (existsSync('/usr/bin/chromium')) return '/usr/bin/chromium';
  const p = packagedChromium();
  if (!p || !existsSync(p)) throw new Error('No Chromium: neither /usr/bin/chromium nor @sparticuz/chromium could provide one');
  return p;
}

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: chromiumPath(), args: ARGS, headless: true });
}

export const MOBILE = { width: 390, height: 844 };
export const DESKTOP = { width: 1280, height: 900 };

/** Screenshots of every state, kept as test artifacts (git-ignored); docs/checkout/ holds a chosen few. */
export const ARTIFACTS = path.join(__dirname, '..', '..', 'test-artifacts', 'checkout');

export async function snap(page: Page, name: string): Promise<void> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const { width } = page.viewportSize() ?? MOBILE;
  await page.screenshot({ path: path.join(ARTIFACTS, `${name}-${width}.png`), fullPage: true });
}

/** Collects what would betray an injected script: dialogs, console errors from CSP, a global flag. */
export function watchForScripts(page: Page): { dialogs: string[]; cspViolations: string[] } {
  const seen = { dialogs: [] as string[], cspViolations: [] as string[] };
  page.on('dialog', (d) => {
    seen.dialogs.push(d.message());
    void d.dismiss();
  });
  page.on('console', (m) => {
    if (/Content Security Policy/i.test(m.text())) seen.cspViolations.push(m.text());
  });
  return seen;
}

/**
 * WCAG contrast of every element that shows text of its own, against the first opaque background up
 * its ancestors: returns the ones under 4.5:1.
 */
export const LOW_CONTRAST = `(() => {
  const rgb = (s) => (s.match(/[\\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => { const f = (c) => { c /= 255; return c <= 0.03928 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4); }; return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b); };
  const bgOf = (el) => { for (let e = el; e; e = e.parentElement) { const c = rgb(getComputedStyle(e).backgroundColor); if (c.length === 3 || c[3] > 0) return c; } return [255, 255, 255]; };
  const bad = [];
  for (const el of document.querySelectorAll('body *')) {
    const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
    if (!own || !el.getClientRects().length || el.closest('.sr-only')) continue;
    const fg = lum(rgb(getComputedStyle(el).color)), bg = lum(bgOf(el));
    const ratio = (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05);
    if (ratio < 4.5) bad.push(el.tagName + '#' + el.id + ' ' + ratio.toFixed(2) + ' ' + el.textContent.slice(0, 30));
  }
  return bad;
})()`;
