import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { NETWORKS } from '../../src/common/environment';
import { SANDBOX_TOKENS } from '../../src/devchain/sandbox.chains';

/** docs/sandbox.md promises fixed token addresses on the local chains: they must be the ones `npm start` deploys. */
it('docs/sandbox.md lists every local test token at the address the sandbox deploys it', () => {
  const doc = readFileSync(join(__dirname, '../../docs/sandbox.md'), 'utf8');
  for (const network of NETWORKS) {
    for (const t of SANDBOX_TOKENS[network]) expect(doc).toContain(t.address);
  }
});
