#!/usr/bin/env node
/**
 * Fast development build for `npm start` and `npm run cli`: transpiles only the TypeScript files that
 * changed since the last run into `.build/` with swc (no type check; `npm run typecheck` and CI do
 * that, and the production image runs `tsc` output from `npm run build`). Same decorator settings as
 * jest (legacy decorators + metadata, which MikroORM and type-graphql need).
 *
 * Dynamic `import()` stays a real `import()`, as `tsc` (module NodeNext) leaves it in `dist/`: swc would
 * otherwise turn it into `require()`, which skips the module resolution hooks (`node:module`
 * `register`) that the embedded PostgreSQL relies on as root under a private folder (see
 * src/db/pg-binaries.ts). The export annotation lets such an `import()` of a transpiled file see its
 * named exports, as it sees them in tsc's output. When these options change, everything is rebuilt.
 */
/* global require, __dirname, process */
/* eslint-disable @typescript-eslint/no-require-imports -- a plain CommonJS script run before anything is built */
'use strict';
const { mkdirSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync, rmSync, existsSync } = require('node:fs');
const { join, dirname, relative } = require('node:path');
const { createHash } = require('node:crypto');
const { transformSync } = require('@swc/core');

const ROOT = join(__dirname, '..');
const OUT = join(ROOT, '.build');
const DIRS = ['src', 'migrations', 'bench'];
const OPTIONS = {
  jsc: {
    parser: { syntax: 'typescript', decorators: true },
    transform: { legacyDecorator: true, decoratorMetadata: true },
    target: 'es2022',
  },
  module: { type: 'commonjs', ignoreDynamic: true, exportInteropAnnotation: true },
  sourceMaps: 'inline',
};
// Output built with other options (or another swc) is stale as a whole.
const STAMP = join(OUT, '.options');
const stamp = createHash('sha256').update(JSON.stringify(OPTIONS)).update(require('@swc/core/package.json').version).digest('hex');
const fresh = existsSync(STAMP) && readFileSync(STAMP, 'utf8') === stamp;

// The dashboard's browser code is bundled by esbuild (scripts/dashboard-build.js), not run by Node.
const BROWSER = join(ROOT, 'src', 'dashboard', 'app');

function* tsFiles(dir) {
  if (!existsSync(dir) || dir === BROWSER) return;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) yield* tsFiles(p);
    else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) yield p;
  }
}

const t0 = Date.now();
let built = 0;
const expected = new Set();
for (const dir of DIRS) {
  for (const file of tsFiles(join(ROOT, dir))) {
    const rel = relative(ROOT, file);
    const out = join(OUT, rel.replace(/\.ts$/, '.js'));
    expected.add(out);
    const src = statSync(file);
    if (fresh && existsSync(out) && statSync(out).mtimeMs >= src.mtimeMs) continue;
    const { code } = transformSync(readFileSync(file, 'utf8'), { ...OPTIONS, filename: file, sourceFileName: relative(dirname(out), file) });
    mkdirSync(dirname(out), { recursive: true });
    // Written beside, then renamed: another `npm run cli` or `npm start` loading it meanwhile never reads half a file.
    const partial = `${out}.${process.pid}.partial`;
    writeFileSync(partial, code);
    renameSync(partial, out);
    built++;
  }
}
// a deleted or renamed source must not leave a stale module behind (the dashboard bundle is not one)
const DASHBOARD_OUT = join(OUT, 'dashboard-app');
let removed = 0;
function prune(dir) {
  if (!existsSync(dir)) return;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory() && p === DASHBOARD_OUT) continue;
    if (e.isDirectory()) prune(p);
    else if (p.endsWith('.js') && !expected.has(p)) {
      rmSync(p);
      removed++;
    }
  }
}
prune(OUT);
if (!fresh) {
  mkdirSync(OUT, { recursive: true });
  writeFileSync(STAMP, stamp);
}
if (built || removed) process.stderr.write(`dev-build: ${built} file(s) transpiled, ${removed} removed in ${Date.now() - t0} ms\n`);
// `npm start` also serves the merchant dashboard: bundled again only when its sources changed.
if (process.argv.includes('--dashboard')) require('./dashboard-build.js').buildDashboard({ out: DASHBOARD_OUT });
