#!/usr/bin/env node
/**
 * Bundles the merchant dashboard (src/dashboard/app, preact + TSX) with esbuild into one script and
 * one stylesheet the gateway serves at /dashboard/assets/ (no CDN; graphql-ws and preact come from
 * node_modules into the bundle).
 *  - `buildDashboard({ out: '.build/dashboard-app' })` for `npm start`: only when a source changed
 *    (a hash of the sources' paths, sizes and mtimes and esbuild's version), with a source map;
 *  - `node scripts/dashboard-build.js --production [out]` for `npm run build`: minified, into
 *    dist/dashboard-app/, and prints the first load's size (raw and gzipped).
 */
/* global require, __dirname, process, module */
/* eslint-disable @typescript-eslint/no-require-imports -- a plain CommonJS script run before anything is built */
'use strict';
const { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');
const { createHash } = require('node:crypto');
const { gzipSync } = require('node:zlib');

const ROOT = join(__dirname, '..');
const SRC = join(ROOT, 'src', 'dashboard', 'app');

function* files(dir) {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) yield* files(p);
    else yield p;
  }
}

function sourceStamp(production) {
  const h = createHash('sha256').update(require('esbuild/package.json').version).update(String(production));
  for (const f of [...files(SRC)].sort()) {
    const s = statSync(f);
    h.update(`${f}:${s.size}:${s.mtimeMs}\n`);
  }
  return h.digest('hex');
}

/** Builds into `out` unless its stamp says the sources are unchanged; returns whether it built. */
function buildDashboard({ out = join(ROOT, '.build', 'dashboard-app'), production = false } = {}) {
  const stampFile = join(out, '.stamp');
  const stamp = sourceStamp(production);
  if (existsSync(stampFile) && readFileSync(stampFile, 'utf8') === stamp && existsSync(join(out, 'dashboard.js'))) return false;
  const t0 = Date.now();
  require('esbuild').buildSync({
    entryPoints: { dashboard: join(SRC, 'main.tsx') },
    bundle: true,
    outdir: out,
    format: 'iife',
    target: ['es2020', 'chrome100', 'safari15', 'firefox100'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    minify: production,
    sourcemap: production ? false : 'linked',
    legalComments: 'none',
    define: { 'process.env.NODE_ENV': production ? '"production"' : '"development"' },
    logLevel: 'error',
  });
  writeFileSync(join(out, 'dashboard.css'), readFileSync(join(SRC, 'dashboard.css')));
  writeFileSync(stampFile, stamp);
  if (!production) process.stderr.write(`dev-build: dashboard bundled in ${Date.now() - t0} ms\n`);
  return true;
}

/** The first load's JavaScript and CSS, raw and gzipped (level 9), in bytes. */
function firstLoadSize(out) {
  const measure = (f) => {
    const b = readFileSync(join(out, f));
    return { raw: b.length, gzip: gzipSync(b, { level: 9 }).length };
  };
  return { js: measure('dashboard.js'), css: measure('dashboard.css') };
}

module.exports = { buildDashboard, firstLoadSize };

if (require.main === module) {
  const production = process.argv.includes('--production');
  const out = process.argv.slice(2).find((a) => !a.startsWith('--')) ?? join(ROOT, production ? 'dist' : '.build', 'dashboard-app');
  mkdirSync(out, { recursive: true });
  buildDashboard({ out, production });
  const size = firstLoadSize(out);
  process.stdout.write(`dashboard first load: JS ${size.js.raw} B (${size.js.gzip} B gzipped), CSS ${size.css.raw} B (${size.css.gzip} B gzipped)\n`);
}
