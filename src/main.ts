import 'reflect-metadata';
import { ConfigError, loadConfig, type Config } from './config/index.js';
import { createLogger } from './http/logger.js';
import { startGateway } from './runtime.js';

async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (e) {
    if (e instanceof ConfigError) {
      console.error(e.message);
      process.exit(1);
    }
    throw e;
  }
  const log = createLogger(config.LOG_LEVEL);
  if (config.generatedSecrets.length) {
    log.warn(
      { generated: config.generatedSecrets, file: `${config.DATA_DIR}/dev-secrets.json` },
      '!!! DEVELOPMENT SECRETS IN USE: generated into the data folder. Never run production like this; set MASTER_KEY and JWT_SECRET !!!',
    );
  }
  const gateway = await startGateway(config, log);
  log.info({ role: config.ROLE, url: gateway.url, environment: config.NODE_ENV }, 'gateway started');

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) {
      log.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    stopping = true;
    log.info({ signal }, 'shutting down');
    const force = setTimeout(() => {
      log.error('shutdown took too long; exiting');
      process.exit(1);
    }, 30_000);
    force.unref();
    gateway.stop().then(
      () => {
        log.info('stopped cleanly');
        process.exit(0);
      },
      (err) => {
        log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

process.on('unhandledRejection', (err) => {
  console.error('unhandled rejection', err);
});

main().catch((err) => {
  console.error('gateway failed to start:', err instanceof Error ? err.message : err);
  process.exit(1);
});
