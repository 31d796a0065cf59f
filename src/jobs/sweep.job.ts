import { writeSync } from 'node:fs';
import type { App } from '../app.js';
import type { WatchedNetwork } from '../chains/networks.js';
import type { Network } from '../common/environment.js';
import { parseDecimal, RATE_SCALE } from '../common/money.js';
import { RATE_SYMBOLS, type RateSymbol } from '../modules/quotes/rate-provider.js';
import { SweepEngine, type SweepStep } from '../modules/sweeps/sweep.engine.js';
import { engineJobs } from './engine-jobs.js';
import type { JobDefinition } from './scheduler.js';

/** The engine of one watched network, wired to the app's services and configuration (jobs, benchmark). */
export function createSweepEngine(app: App, target: WatchedNetwork, crashAfter = app.config.SWEEP_CRASH_AFTER): SweepEngine {
  const { config } = app;
  return new SweepEngine({
    environment: target.environment,
    network: target.network,
    adapter: target.adapter,
    confirmations: target.config.confirmations,
    status: app.sweepStatus,
    tanks: app.gasTanks,
    wallets: app.wallets,
    log: app.log,
    dustPercent: config.SWEEP_DUST_PERCENT,
    nativePriceUsd: config[`SWEEP_NATIVE_PRICE_${target.network as Network}`],
    batchSize: config.SWEEP_BATCH_SIZE,
    holdRecheckS: config.SWEEP_HOLD_RECHECK_S,
    stuckAfterS: config.SWEEP_STUCK_AFTER_S,
    maxFeeBumpPercent: config.SWEEP_MAX_FEE_BUMP_PERCENT,
    // IDR values of fees and swept amounts at the time they are recorded (the checkout's rate service: cached, with its fallback).
    rate: async (symbol) =>
      (RATE_SYMBOLS as readonly string[]).includes(symbol) ? parseDecimal((await app.rates.getRate(symbol as RateSymbol)).rate, RATE_SCALE) : null,
    // Test-only (refused in production): die like SIGKILL right after the step, no cleanup at all.
    crashPoint: crashAfter
      ? (step: SweepStep) => {
          if (step === crashAfter) {
            // Written synchronously: pino's buffered stream would lose the line to the SIGKILL below.
            writeSync(2, `${JSON.stringify({ level: 60, step, msg: 'SWEEP_CRASH_AFTER: killing the process' })}\n`);
            process.kill(process.pid, 'SIGKILL');
          }
        }
      : undefined,
  });
}

/** The sweep jobs, one per (environment, network): `engineJobs` with SWEEP_POLL_MS. */
export function sweepJobs(targets: WatchedNetwork[], lockMs: number): JobDefinition[] {
  return engineJobs(
    'sweep',
    targets,
    lockMs,
    (app, target) => createSweepEngine(app, target),
    (app) => app.config.SWEEP_POLL_MS,
  );
}
