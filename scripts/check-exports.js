#!/usr/bin/env node
/*
 * Dead exports: every symbol exported from src/, bench/ or test/support/ (and from the dashboard app,
 * its own TypeScript project) that no other file imports and its own file does not use either, and
 * every re-export nobody imports. `npm run check:exports`, part of `npm run lint`: exits 1 and lists
 * them as file:line name. `--local` also lists exports used only inside their own file (an
 * `export` keyword too many; not a failure).
 *
 * A use is an import or re-export of the name (followed through re-exports), a namespace import
 * (`import * as m`: all of m) or a dynamic `import('…')` (all of the module). Default exports are
 * skipped: tools load them by convention (jest setup, configs).
 */
/* global require, __dirname, process, console */
/* eslint-disable @typescript-eslint/no-require-imports -- a plain CommonJS script, run without a build */
const path = require('node:path');
const ts = require('typescript');

const root = path.resolve(__dirname, '..');
const rel = (f) => path.relative(root, f).split(path.sep).join('/');

function program(tsconfig) {
  const file = path.join(root, tsconfig);
  const cfg = ts.readConfigFile(file, ts.sys.readFile);
  if (cfg.error) throw new Error(ts.flattenDiagnosticMessageText(cfg.error.messageText, '\n'));
  const parsed = ts.parseJsonConfigFileContent(cfg.config, ts.sys, path.dirname(file));
  return ts.createProgram(parsed.fileNames, { ...parsed.options, noEmit: true });
}

/** Exports a runtime loads by name, not by import: Node's module-customisation hooks (`module.register`). */
const LOADED_BY_NAME = { 'src/db/pg-binaries.hook.ts': ['initialize', 'resolve'] };

/** Files whose exports are checked: the project's own source, not generated code, tests or packages. */
const checked = (f) =>
  /^(src|bench|test\/support)\//.test(f) && !/(^|\/)generated\//.test(f) && !f.endsWith('.d.ts');

function unusedIn(prog) {
  const checker = prog.getTypeChecker();
  const files = prog.getSourceFiles().filter((sf) => !sf.isDeclarationFile && !rel(sf.fileName).startsWith('..') && !rel(sf.fileName).includes('node_modules/'));
  const used = new Set();
  const markChain = (sym) => {
    for (let s = sym, n = 0; s && n < 20 && !used.has(s); n++) {
      used.add(s);
      if (!(s.flags & ts.SymbolFlags.Alias)) break;
      s = checker.getImmediateAliasedSymbol(s);
    }
  };
  const markModule = (moduleSpecifier) => {
    const m = checker.getSymbolAtLocation(moduleSpecifier);
    if (m) for (const e of checker.getExportsOfModule(m)) markChain(e);
  };
  for (const sf of files) {
    const visit = (node) => {
      if (ts.isImportDeclaration(node) && node.importClause) {
        const c = node.importClause;
        if (c.name) markChain(checker.getSymbolAtLocation(c.name));
        const b = c.namedBindings;
        if (b && ts.isNamespaceImport(b)) markModule(node.moduleSpecifier);
        if (b && ts.isNamedImports(b)) for (const el of b.elements) markChain(checker.getSymbolAtLocation(el.name));
      } else if (ts.isExportDeclaration(node) && node.moduleSpecifier) {
        // A re-export from another module uses that module's names (and is itself an export, checked below).
        if (node.exportClause && ts.isNamedExports(node.exportClause)) {
          for (const el of node.exportClause.elements) {
            const s = checker.getSymbolAtLocation(el.name);
            if (s && s.flags & ts.SymbolFlags.Alias) markChain(checker.getImmediateAliasedSymbol(s));
          }
        } else if (!node.exportClause) markModule(node.moduleSpecifier);
      } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && node.arguments[0]) {
        markModule(node.arguments[0]);
      } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
        markModule(node.moduleReference.expression);
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
  }
  const out = { dead: [], local: [] };
  for (const sf of files) {
    const f = rel(sf.fileName);
    if (!checked(f)) continue;
    const mod = checker.getSymbolAtLocation(sf);
    if (!mod) continue;
    // A folder's index.ts is its public face (chains/<family>/index.ts): what it re-exports is offered, not checked.
    if (f.endsWith('/index.ts')) continue;
    const unused = checker.getExportsOfModule(mod).filter((e) => e.escapedName !== 'default' && !used.has(e) && e.declarations?.[0]?.getSourceFile() === sf && !LOADED_BY_NAME[f]?.includes(e.name));
    if (!unused.length) continue;
    // Uses inside the file itself: identifiers naming the symbol, other than its declarations' names.
    const names = new Set(unused.flatMap((e) => e.declarations.map((d) => d.name).filter(Boolean)));
    const local = new Set();
    const visit = (node) => {
      if (ts.isIdentifier(node) && !names.has(node)) {
        const s = checker.getSymbolAtLocation(node);
        if (s) local.add(s);
        // A shorthand `{ x }` names the local value.
        if (ts.isShorthandPropertyAssignment(node.parent)) local.add(checker.getShorthandAssignmentValueSymbol(node.parent));
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
    for (const e of unused) {
      const decl = e.declarations[0];
      const { line } = sf.getLineAndCharacterOfPosition(decl.getStart());
      // `export { x } from './m'`, or `export { x }` of a name this file imported: handing on another module's name.
      const target = e.flags & ts.SymbolFlags.Alias ? checker.getImmediateAliasedSymbol(e) : undefined;
      const isReExport =
        ts.isExportSpecifier(decl) && (!!decl.parent.parent.moduleSpecifier || !!target?.declarations?.some((d) => ts.isImportSpecifier(d) || ts.isImportClause(d) || ts.isNamespaceImport(d)));
      const usedHere = !isReExport && (local.has(e) || (target !== undefined && local.has(target)));
      (usedHere ? out.local : out.dead).push(`${f}:${line + 1} ${e.name}${isReExport ? ' (re-export)' : ''}`);
    }
  }
  return out;
}

const results = [unusedIn(program('tsconfig.json')), unusedIn(program('src/dashboard/app/tsconfig.json'))];
const dead = results.flatMap((r) => r.dead).sort();
if (process.argv.includes('--local')) {
  const local = results.flatMap((r) => r.local).sort();
  console.warn(`Exported but used only in their own file (${local.length}):\n${local.map((u) => `  ${u}`).join('\n')}`);
}
if (dead.length) {
  console.error(`Dead exports: nothing imports them and their own file does not use them (delete them, or the export):\n${dead.map((u) => `  ${u}`).join('\n')}`);
  process.exit(1);
}
