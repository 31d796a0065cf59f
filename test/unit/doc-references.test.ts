import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/**
 * Docs that stay true: every doc reference written in code (`README "Heading"`, `docs/x.md
 * "Section → Subsection"`, or a bare `docs/x.md`) names an existing file and heading, every relative
 * link in README/docs resolves (file and #anchor), and nothing points outside the repository.
 */
const ROOT = resolve(__dirname, '..', '..');

function walk(dir: string, keep: (path: string) => boolean): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'generated' || name === 'node_modules' ? [] : walk(path, keep);
    return keep(path) ? [path] : [];
  });
}

const CODE_FILES = [
  ...['src', 'test', 'bench', 'migrations'].flatMap((d) => walk(join(ROOT, d), (p) => /\.(ts|js|mjs|graphql)$/.test(p))),
  join(ROOT, '.ci', 'run'),
  join(ROOT, 'eslint.config.mjs'),
  join(ROOT, 'jest.config.js'),
];
const DOC_FILES = [join(ROOT, 'README.md'), ...walk(join(ROOT, 'docs'), (p) => p.endsWith('.md'))];

/** Markdown without fenced code blocks (a `#` comment in a shell block is not a heading). */
const prose = (md: string) => md.replace(/^```[\s\S]*?^```/gm, '');

/** Heading texts in document order. */
export function headings(md: string): string[] {
  return [...prose(md).matchAll(/^#{1,6} +(.+?) *#*$/gm)].map((m) => m[1]!);
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
export function slug(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

export interface DocRef {
  where: string;
  file: string;
  heading?: string;
}

/** `README "A → B"`, `docs/x.md "A"`, `docs/x.md` as written in code. */
export function docRefs(text: string, where: string): DocRef[] {
  return [...text.matchAll(/\b(README(?:\.md)?|docs\/[\w./-]*\w\.md)(?:\s+"([^"\n]+)")?/g)].map((m) => ({
    where,
    file: m[1]!.startsWith('README') ? 'README.md' : m[1]!,
    heading: m[2],
  }));
}

/** What is wrong with a reference, or null. A heading path `A → B` must appear in that order. */
export function checkRef(ref: DocRef, readDoc: (file: string) => string | undefined): string | null {
  const md = readDoc(ref.file);
  if (md === undefined) return `${ref.where}: ${ref.file} does not exist`;
  if (!ref.heading) return null;
  const all = headings(md);
  let from = 0;
  for (const part of ref.heading.split(' → ')) {
    const i = all.indexOf(part, from);
    if (i < 0) return `${ref.where}: ${ref.file} has no heading "${part}"${from ? ' after the previous part' : ''}`;
    from = i + 1;
  }
  return null;
}

/** What is wrong with each relative link of a markdown file (target file, #anchor, inside the repository). */
export function checkLinks(file: string, md: string, readDoc: (file: string) => string | undefined, exists: (file: string) => boolean): string[] {
  const problems: string[] = [];
  for (const m of prose(md).matchAll(/\]\(([^)\s]+)\)/g)) {
    const target = m[1]!;
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto: — not a file
    const [path, anchor] = target.split('#') as [string, string | undefined];
    const resolved = path ? relative(ROOT, resolve(ROOT, dirname(file), path)) : file;
    if (resolved.startsWith('..')) {
      problems.push(`${file}: ${target} leaves the repository`);
      continue;
    }
    if (!exists(resolved)) {
      problems.push(`${file}: ${target} does not exist`);
      continue;
    }
    if (anchor && resolved.endsWith('.md') && !headings(readDoc(resolved) ?? '').some((h) => slug(h) === anchor)) {
      problems.push(`${file}: ${target} has no heading with anchor #${anchor}`);
    }
  }
  return problems;
}

const readDoc = (file: string) => (existsSync(join(ROOT, file)) ? readFileSync(join(ROOT, file), 'utf8') : undefined);
const exists = (file: string) => existsSync(join(ROOT, file));
const rel = (path: string) => relative(ROOT, path);

describe('doc references in code', () => {
  // This file is left out: its comments and samples show the syntax with made-up names.
  const refs = CODE_FILES.filter((path) => path !== __filename).flatMap((path) =>
    readFileSync(path, 'utf8')
      .split('\n')
      .flatMap((line, i) => docRefs(line, `${rel(path)}:${i + 1}`)),
  );

  it('are found (the scan reads the code)', () => {
    expect(refs.filter((r) => r.heading).length).toBeGreaterThanOrEqual(10);
  });

  it('each names an existing file and heading', () => {
    expect(refs.map((r) => checkRef(r, readDoc)).filter(Boolean)).toEqual([]);
  });

  it('a wrong file or heading is reported', () => {
    expect(checkRef({ where: 'x', file: 'docs/nope.md' }, readDoc)).toMatch(/does not exist/);
    expect(checkRef({ where: 'x', file: 'docs/webhooks.md', heading: 'No such heading' }, readDoc)).toMatch(/no heading "No such heading"/);
    expect(checkRef({ where: 'x', file: 'docs/webhooks.md', heading: 'Payload → Events' }, readDoc)).toMatch(/after the previous part/);
    expect(checkRef({ where: 'x', file: 'docs/webhooks.md', heading: 'Events → Payload' }, readDoc)).toBeNull();
  });
});

describe('links in README and docs/', () => {
  it('every relative link resolves to a file (and heading) inside the repository', () => {
    expect(DOC_FILES.flatMap((path) => checkLinks(rel(path), readFileSync(path, 'utf8'), readDoc, exists))).toEqual([]);
  });

  it('a broken link, anchor or a link out of the repository is reported', () => {
    const md = '[a](docs/nope.md) [b](docs/api.md#no-such-anchor) [c](../shared/spec/x.md) [d](docs/api.md#rate-limits) [e](https://example.com)';
    expect(checkLinks('README.md', md, readDoc, exists)).toEqual([
      'README.md: docs/nope.md does not exist',
      'README.md: docs/api.md#no-such-anchor has no heading with anchor #no-such-anchor',
      'README.md: ../shared/spec/x.md leaves the repository',
    ]);
  });

  it('nothing in the docs or the code points at files outside the repository', () => {
    const outside = /\.\.\/shared\/|\bSTACK\.md\b|\bARCHITECTURE\.md\b|gateway-interface\.md/;
    const hits = [...DOC_FILES, ...CODE_FILES].filter((p) => p !== __filename && outside.test(readFileSync(p, 'utf8'))).map(rel);
    expect(hits).toEqual([]);
  });
});
