import type { CodegenConfig } from '@graphql-codegen/cli';

/**
 * Typed documents generated from the committed SDL (`npm run codegen`; run before `npm test`):
 * - `test/graphql/*.graphql` → `test/generated/`: the tests use them the way a dashboard frontend would;
 * - `src/dashboard/app/graphql/*.graphql` → `src/dashboard/app/generated/`: the merchant dashboard's own
 *   operations, as strings (no `graphql` runtime in the browser bundle), committed so `npm start`
 *   builds the dashboard without running codegen first.
 */
const shared = { enumsAsTypes: true, scalars: { DateTime: 'string', JSONObject: 'Record<string, unknown>' }, useTypeImports: true };

const config: CodegenConfig = {
  schema: 'schema/schema.graphql',
  ignoreNoDocuments: false,
  generates: {
    'test/generated/': {
      documents: ['test/graphql/**/*.graphql'],
      preset: 'client',
      presetConfig: { fragmentMasking: false },
      config: { enumsAsTypes: true, scalars: { DateTime: 'string' }, useTypeImports: true },
    },
    'src/dashboard/app/generated/': {
      documents: ['src/dashboard/app/graphql/**/*.graphql'],
      preset: 'client',
      presetConfig: { fragmentMasking: false, gqlTagName: 'gql' },
      config: { ...shared, documentMode: 'string' },
    },
  },
};

export default config;
