import { registerEnumType } from 'type-graphql';

/** GraphQL enum values are upper-case; services use the lower-case internal names. */
export enum EnvironmentEnum {
  SANDBOX = 'sandbox',
  PRODUCTION = 'production',
}
registerEnumType(EnvironmentEnum, { name: 'Environment', description: 'Sandbox (testnets) or production (mainnets)' });
