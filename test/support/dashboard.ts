import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';

/** Screenshots of the dashboard's screens, as test artifacts (git-ignored); docs/dashboard/ keeps a copy. */
export const DASHBOARD_ARTIFACTS = path.join(__dirname, '..', '..', 'test-artifacts', 'dashboard');

export async function dashboardSnap(page: Page, name: string): Promise<void> {
  mkdirSync(DASHBOARD_ARTIFACTS, { recursive: true });
  const width = page.viewportSize()?.width ?? 0;
  await page.screenshot({ path: path.join(DASHBOARD_ARTIFACTS, `${name}-${width}.png`), fullPage: true });
}
