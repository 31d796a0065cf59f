import { finalizeConfig, parseConfig, type Config } from './config.js';
import { loadOrCreateDevSecrets } from './dev-secrets.js';

export * from './config.js';

/** Boot-time config: env → validated Config (throws ConfigError naming the variables). */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = parseConfig(env);
  return finalizeConfig(parsed, () => loadOrCreateDevSecrets(parsed.DATA_DIR));
}
