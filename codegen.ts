import type { CodegenConfig } from '@graphql-codegen/cli';

/**
 * Typed documents for the operations in `test/graphql/*.graphql`, generated from the committed SDL.
 * The tests use them the way a dashboard frontend would (`npm run codegen`; run before `npm test`).
 */
const config: CodegenConfig = {
  schema: 'schema/schema.graphql',
  documents: ['test/graphql/**/*.graphql'],
  ignoreNoDocuments: false,
  generates: {
    'test/generated/': {
      preset: 'client',
      presetConfig: { fragmentMasking: false },
      config: { enumsAsTypes: true, scalars: { DateTime: 'string' }, useTypeImports: true },
    },
  },
};

export default config;
