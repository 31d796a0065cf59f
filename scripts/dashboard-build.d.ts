/** Types of scripts/dashboard-build.js for the TypeScript that calls it (tests, benchmarks). */
export function buildDashboard(options?: { out?: string; production?: boolean }): boolean;
export function firstLoadSize(out: string): { js: { raw: number; gzip: number }; css: { raw: number; gzip: number } };
