import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import 'reflect-metadata';
import { chromium } from 'playwright-core';
import { openApp } from '../src/app.js';
import { internalContext } from '../src/common/context.js';
import { loadConfig } from '../src/config/index.js';
import { BenchCleanup, benchDatabase, benchOrm, percentile, runBench, startGatewayProcess } from './support.js';

/**
 * `npm run bench:dashboard`: the merchant dashboard's first load and time to interactive.
 *  - size: the production bundle (`npm run build` → dist/dashboard-app), raw and gzipped (level 9);
 *  - sign-in TTI: a cold browser context (empty cache) opens /dashboard → the sign-in form is rendered
 *    and can be submitted, in ms from navigation start (the page's own performance.now());
 *  - orders TTI: signed in, a reload of /dashboard#/orders (script and styles from the browser's cache,
 *    as a returning merchant meets it) → the orders answer is on screen.
 * BENCH_RUNS (default 7) cold loads each, median and p90, Chromium headless on loopback against the
 * built gateway (api role, its own database). Last line: one JSON object.
 */
const RUNS = Number(process.env.BENCH_RUNS ?? 7);
const ROOT = join(__dirname, '..', '..');
const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'];
const cleanup = new BenchCleanup();

async function main() {
  const out = join(ROOT, 'dist', 'dashboard-app');
  const sizeLine = execFileSync(process.execPath, [join(ROOT, 'scripts', 'dashboard-build.js'), '--production', out], { encoding: 'utf8' }).trim();
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- the build script is plain CommonJS
  const { firstLoadSize } = require(join(ROOT, 'scripts', 'dashboard-build.js')) as typeof import('../scripts/dashboard-build.js');
  const size = firstLoadSize(out);

  const db = await benchDatabase('cpg_bench_dashboard');
  cleanup.add(() => db.release());
  const env: Record<string, string> = {
    NODE_ENV: 'development',
    DATABASE_URL: db.url,
    MASTER_KEY: '66'.repeat(32),
    JWT_SECRET: 'bench-dashboard-jwt-secret-0123456789abcdef',
    DEV_CHAINS: 'false',
    RATE_SOURCES: 'none',
    ROLE: 'api',
    // one merchant signs in once per run, from one address
    RATE_LIMIT_LOGIN_PER_MIN: '1000',
    RATE_LIMIT_LOGIN_ACCOUNT_PER_MIN: '1000',
  };
  const orm = await benchOrm(db.url, 2);
  cleanup.add(() => orm.close());
  const app = await openApp(loadConfig({ ...env, LOG_LEVEL: 'warn' }), orm, pino({ level: 'warn' }));
  const account = { email: 'bench@dashboard.test', password: 'bench-dashboard-password' };
  await app.merchants.create(internalContext(orm.em.fork()), { name: 'Bench dashboard', ...account });
  const gw = await startGatewayProcess(env);
  cleanup.child(gw.proc);

  const browser = await chromium.launch({ executablePath: existsSync('/usr/bin/chromium') ? '/usr/bin/chromium' : undefined, args: ARGS, headless: true });
  cleanup.add(() => browser.close());
  const signIn: number[] = [];
  const orders: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await ctx.newPage();
    page.setDefaultTimeout(120_000); // a loaded machine: a slow answer is a figure, not a failure
    await page.goto(`${gw.url}/dashboard`);
    await page.locator('#sign-in-submit:enabled').waitFor();
    signIn.push(await page.evaluate<number>('performance.now()'));
    await page.locator('#email').fill(account.email);
    await page.locator('#password').fill(account.password);
    await page.locator('#sign-in-submit').click();
    await page.locator('#nav-orders, #sign-in .error').first().waitFor();
    if (await page.locator('#sign-in .error').count()) throw new Error(`sign-in failed: ${await page.locator('#sign-in .error').innerText()}`);
    // Signed in (this tab's session): a reload of the Orders screen.
    await page.goto(`${gw.url}/dashboard#/orders`);
    await page.reload();
    await page.locator('#total-count').waitFor();
    orders.push(await page.evaluate<number>('performance.now()'));
    await ctx.close();
  }
  const stat = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    return { median_ms: Math.round(percentile(s, 50)), p90_ms: Math.round(percentile(s, 90)) };
  };
  console.log(sizeLine);
  console.log(
    JSON.stringify({
      runs: RUNS,
      js_gzip_bytes: size.js.gzip,
      js_bytes: size.js.raw,
      css_gzip_bytes: size.css.gzip,
      sign_in_tti: stat(signIn),
      orders_tti: stat(orders),
    }),
  );
}

runBench('dashboard', 600, cleanup, main);
