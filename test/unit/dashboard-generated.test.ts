/**
 * The dashboard's typed documents (src/dashboard/app/generated/) are committed so `npm start` builds
 * without codegen; they must be what `npm run codegen` writes from today's schema and .graphql files.
 * GraphQL Code Generator runs in a child process (its presets load as ES modules, which jest's module
 * system does not), with codegen.ts itself, writing nothing: it prints what it would write.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.join(__dirname, '..', '..');
const TARGET = 'src/dashboard/app/generated/';

const WOULD_WRITE = `
const { generate, loadCodegenConfig } = require('@graphql-codegen/cli');
(async () => {
  const { config } = await loadCodegenConfig({ configFilePath: 'codegen.ts' });
  const target = ${JSON.stringify(TARGET)};
  const outputs = await generate({ ...config, silent: true, generates: { [target]: config.generates[target] } }, false);
  process.stdout.write(JSON.stringify(outputs.map((o) => ({ filename: o.filename, content: o.content }))));
})().catch((e) => { console.error(e); process.exit(1); });
`;

jest.setTimeout(120_000);

it('src/dashboard/app/generated/ is what `npm run codegen` writes from schema/schema.graphql and src/dashboard/app/graphql/', () => {
  const outputs = JSON.parse(execFileSync(process.execPath, ['-e', WOULD_WRITE], { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })) as {
    filename: string;
    content: string;
  }[];
  expect(outputs.map((o) => path.basename(o.filename)).sort()).toEqual(['gql.ts', 'graphql.ts', 'index.ts']);
  for (const o of outputs) {
    const committed = readFileSync(path.join(ROOT, o.filename), 'utf8');
    expect({ file: o.filename, fresh: committed === o.content }).toEqual({ file: o.filename, fresh: true });
  }
});
