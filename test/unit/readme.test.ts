import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { configMarkdownTable } from '../../src/config';

const readme = readFileSync(join(__dirname, '..', '..', 'README.md'), 'utf8');

it('README configuration table matches the config declarations (npm run cli -- config:docs --write README.md)', () => {
  const m = readme.match(/<!-- config-table:start -->\n([\s\S]*?)\n<!-- config-table:end -->/);
  expect(m?.[1]).toBe(configMarkdownTable());
});

it('README shows the two quick-start commands', () => {
  expect(readme).toContain('npm install --loglevel=warn && npm start');
  expect(readme).toContain('npm test');
});
