import type { MigrationObject } from '@mikro-orm/core';
import { Migration20261121000100_foundation } from './Migration20261121000100_foundation.js';

/** Every migration, in order. Listed explicitly so `dist/` and the test runner load the same set. */
export const migrationsList: MigrationObject[] = [
  { name: 'Migration20261121000100_foundation', class: Migration20261121000100_foundation },
];
