import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');

type Sample = { file: string; code: string };

/**
 * The rule ids eslint reports for each sample, as if its code lived at its file. ESLint loads
 * eslint.config.mjs with a dynamic import, which jest's module sandbox refuses: one child node does it.
 */
function ruleIds(samples: Sample[]): string[][] {
  const script = `
    const { ESLint } = require('eslint');
    const path = require('node:path');
    const samples = JSON.parse(process.argv[1]);
    (async () => {
      const eslint = new ESLint({ cwd: process.cwd() });
      const out = [];
      for (const s of samples) {
        const [r] = await eslint.lintText(s.code, { filePath: path.join(process.cwd(), s.file) });
        out.push(r.messages.map((m) => m.ruleId || m.message));
      }
      process.stdout.write(JSON.stringify(out));
    })().catch((e) => { console.error(e); process.exit(1); });`;
  return JSON.parse(execFileSync(process.execPath, ['-e', script, JSON.stringify(samples)], { cwd: ROOT, encoding: 'utf8' })) as string[][];
}

/** Each sample's file and first line → whether eslint reported the rule, against what was expected. */
function expectRules(cases: [Sample, string, boolean][]): void {
  const found = ruleIds(cases.map(([s]) => s));
  const outcome = cases.map(([s, rule], i) => `${s.file} ${s.code.trim().split('\n')[0]} → ${rule}: ${found[i].includes(rule)}`);
  expect(outcome).toEqual(cases.map(([s, rule, expected]) => `${s.file} ${s.code.trim().split('\n')[0]} → ${rule}: ${expected}`));
}

const readsEnv = 'export const port = process.env.PORT;\n';
const importing = (target: string) => `import { x } from '${target}';\nexport const y = x;\n`;

describe('eslint.config.mjs: layering rules', () => {
  it('process.env is read only in src/config; modules import no transport (their resolvers may)', () => {
    const cases: [Sample, string, boolean][] = [
      [{ file: 'src/modules/orders/x.service.ts', code: readsEnv }, 'no-restricted-properties', true],
      [{ file: 'src/http/x.ts', code: readsEnv }, 'no-restricted-properties', true],
      [{ file: 'src/config/x.ts', code: readsEnv }, 'no-restricted-properties', false],
      [{ file: 'test/unit/x.test.ts', code: readsEnv }, 'no-restricted-properties', false],
      [{ file: 'src/modules/orders/x.service.ts', code: importing('../../app.js') }, 'no-restricted-imports', true],
      [{ file: 'src/modules/orders/x.service.ts', code: importing('../../rest/routes.js') }, 'no-restricted-imports', true],
      [{ file: 'src/modules/orders/x.service.ts', code: importing('../../http/server.js') }, 'no-restricted-imports', true],
      [{ file: 'src/modules/orders/x.service.ts', code: importing('../../graphql/pubsub.js') }, 'no-restricted-imports', true],
      [{ file: 'src/modules/quotes/providers/x.ts', code: importing('../../../graphql/scalars.js') }, 'no-restricted-imports', true],
      [{ file: 'src/modules/orders/order.resolver.ts', code: importing('../../graphql/scalars.js') }, 'no-restricted-imports', false],
      [{ file: 'src/rest/x.ts', code: importing('../app.js') }, 'no-restricted-imports', false],
      [{ file: 'src/modules/orders/x.service.ts', code: importing('../../common/errors.js') }, 'no-restricted-imports', false],
      [{ file: 'src/modules/orders/x.service.ts', code: importing('../merchants/merchant.entity.js') }, 'no-restricted-imports', false],
    ];
    expectRules(cases);
  });

  it('chain client libraries only in src/chains and src/devchain; src/devchain only in the composition root (import() too)', () => {
    const dynamic = (target: string) => `export const load = () => import('${target}');\n`;
    const cases: [Sample, string, boolean][] = [
      [{ file: 'src/modules/faucet/x.service.ts', code: importing('ethers') }, 'no-restricted-imports', true],
      [{ file: 'src/modules/faucet/x.service.ts', code: importing('@solana/spl-token') }, 'no-restricted-imports', true],
      [{ file: 'src/modules/orders/order.resolver.ts', code: importing('tronweb/utils') }, 'no-restricted-imports', true],
      [{ file: 'src/checkout/x.ts', code: importing('@solana/web3.js') }, 'no-restricted-imports', true],
      [{ file: 'src/common/x.ts', code: dynamic('ethers') }, 'no-restricted-syntax', true],
      [{ file: 'src/cli/x.ts', code: importing('tronweb') }, 'no-restricted-imports', true],
      [{ file: 'src/cli/x.ts', code: dynamic('@solana/web3.js') }, 'no-restricted-syntax', true],
      [{ file: 'src/chains/evm/x.ts', code: importing('ethers') }, 'no-restricted-imports', false],
      [{ file: 'src/devchain/x.ts', code: importing('@solana/web3.js') }, 'no-restricted-imports', false],
      [{ file: 'test/integration/x.test.ts', code: importing('ethers') }, 'no-restricted-imports', false],
      [{ file: 'bench/x.bench.ts', code: importing('tronweb') }, 'no-restricted-imports', false],
      [{ file: 'src/modules/faucet/x.service.ts', code: importing('../../devchain/dev-keys.js') }, 'no-restricted-imports', true],
      [{ file: 'src/chains/networks.ts', code: importing('../devchain/devchain.js') }, 'no-restricted-imports', true],
      [{ file: 'src/chains/x.ts', code: dynamic('../devchain/index.js') }, 'no-restricted-syntax', true],
      [{ file: 'src/http/x.ts', code: dynamic('../devchain/index.js') }, 'no-restricted-syntax', true],
      [{ file: 'src/runtime.ts', code: dynamic('./devchain/index.js') }, 'no-restricted-syntax', false],
      [{ file: 'src/app.ts', code: importing('./devchain/dev-keys.js') }, 'no-restricted-imports', false],
      [{ file: 'src/cli/cli.ts', code: importing('../devchain/index.js') }, 'no-restricted-imports', false],
    ];
    expectRules(cases);
  });
});
