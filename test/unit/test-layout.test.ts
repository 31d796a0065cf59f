import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const TEST = join(__dirname, '..');

function testFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'generated' ? [] : testFiles(path);
    return name.endsWith('.test.ts') ? [relative(TEST, path)] : [];
  });
}

// jest.config.js runs only these folders: a test file anywhere else would silently never run.
it('every test file lives in a layer jest runs (test/unit, test/integration, test/e2e)', () => {
  const files = testFiles(TEST);
  expect(files.length).toBeGreaterThan(30);
  expect(files.filter((f) => !/^(unit|integration|e2e)\//.test(f))).toEqual([]);
});
