import 'reflect-metadata';
import { ConfigError, loadConfig, type Config } from './config/index.js';
import { devSecretsNotice } from './config/dev-secrets.js';
import { applyV8Flags } from './config/v8-flags.js';
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
  applyV8Flags(config);
  const log = createLogger(config.LOG_LEVEL);
  const notice = devSecretsNotice(config);
  if (notice) log.warn({ secrets: config.generatedSecrets, file: notice.file }, notice.message);
  // Signal handlers go in before anything starts: a SIGINT/SIGTERM that lands while the database,
  // HTTP server or scheduler are still starting (the server may already answer /readyz) must still
  // shut down gracefully — not kill the process and orphan an embedded PostgreSQL.
  let stopping = false;
  let firstSignalAt = 0;
  const shutdown = (signal: string) => {
    if (stopping) {
      // Ctrl-C reaches the whole process group, and npm/timeout relay it once more: one key press
      // arrives as two or three signals within moments. Only a later, deliberate one forces the exit.
      if (Date.now() - firstSignalAt < 2000) return;
      log.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    stopping = true;
    firstSignalAt = Date.now();
    log.info({ signal }, 'shutting down');
    const force = setTimeout(() => {
      log.error('shutdown took too long; exiting');
      process.exit(1);
    }, 30_000);
    force.unref();
    // Waits for a start in progress; a start that fails has already undone itself.
    starting
      .then((gateway) => gateway.stop())
      .then(
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
  // A closed terminal hangs up: the launcher relays SIGHUP, whose default action would kill the gateway
  // at once and leave its embedded PostgreSQL and chains behind.
  process.on('SIGHUP', () => shutdown('SIGHUP'));
  // Started with an IPC channel (scripts/start.js, `npm start`'s launcher): the gateway runs in a
  // process group of its own, so a SIGKILL to the launcher's group never reaches it. The channel
  // closes when the launcher dies, however it dies: stop as on SIGTERM rather than run on alone.
  if (process.connected) {
    process.channel?.unref(); // the channel alone never keeps the process alive
    process.once('disconnect', () => {
      if (!stopping) shutdown('launcher gone');
    });
  }

  const starting = startGateway(config, log);
  const gateway = await starting;
  if (!stopping) log.info({ role: config.ROLE, url: gateway.url, environment: config.NODE_ENV }, 'gateway started');
}

process.on('unhandledRejection', (err) => {
  console.error('unhandled rejection', err);
});

main().catch((err) => {
  console.error('gateway failed to start:', err instanceof Error ? err.message : err);
  process.exit(1);
});
