import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { GENERATED_SECTIONS, errorTable, readSection, replaceSection, transitionTable } from '../../src/cli/docs.writer';
import { ErrorCodes } from '../../src/common/errors';

const ROOT = join(__dirname, '..', '..');
const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');

describe('generated sections of docs/ match the code (rewrite them: npm run cli -- docs:write)', () => {
  it.each(GENERATED_SECTIONS.map((s) => [`${s.file} <!-- ${s.marker} -->`, s] as const))('%s', (_name, section) => {
    expect(readSection(read(section.file), section.marker)).toBe(section.render());
  });
});

describe('the generators', () => {
  it('a transition table lists every state, its moves, and final states', () => {
    expect(transitionTable({ open: ['settled', 'closed'], settled: ['closed'], closed: [] })).toBe(
      ['| From | May move to |', '|---|---|', '| `open` | `settled`, `closed` |', '| `settled` | `closed` |', '| `closed` | — (final) |'].join('\n'),
    );
  });

  it('the error table names every code once, on the row of its HTTP status', () => {
    const table = errorTable();
    for (const [code, status] of Object.entries(ErrorCodes)) {
      const rows = table.split('\n').filter((row) => row.includes(`\`${code}\``));
      expect([code, rows.length, rows[0]?.startsWith(`| ${status} |`)]).toEqual([code, 1, true]);
    }
  });

  it('replacing a section keeps the markers and everything around them; a missing pair is an error', () => {
    const text = 'before\n<!-- x:start -->\nold\n<!-- x:end -->\nafter\n';
    expect(replaceSection(text, 'x', 'new $1 body')).toBe('before\n<!-- x:start -->\nnew $1 body\n<!-- x:end -->\nafter\n');
    expect(() => replaceSection(text, 'y', 'z')).toThrow(/no <!-- y:start\/end --> pair/);
  });
});

describe('README', () => {
  const readme = read('README.md');

  it('shows the two quick-start commands', () => {
    expect(readme).toContain('npm install --loglevel=warn && npm start');
    expect(readme).toContain('npm test');
  });

  it('stays short enough for a newcomer (≤ 200 lines; the rest lives in docs/)', () => {
    expect(readme.split('\n').length).toBeLessThanOrEqual(200);
  });
});

it('docs/dependencies.md says why each package in package.json is there', () => {
  const pkg = JSON.parse(read('package.json')) as { dependencies: Record<string, string>; devDependencies: Record<string, string> };
  const doc = read('docs/dependencies.md');
  const named = new Set([...doc.matchAll(/^\|([^|]+)\|/gm)].flatMap((m) => m[1]!.split(',').map((s) => s.trim())));
  const missing = [...Object.keys(pkg.dependencies), ...Object.keys(pkg.devDependencies)].filter((p) => !named.has(p));
  expect(missing).toEqual([]);
});
