import { writeSync } from 'node:fs';
import type { App } from '../app.js';
import type { WatchedNetwork } from '../chains/networks.js';
import type { Network } from '../common/environment.js';
import { parseDecimal, RATE_SCALE } from '../common/money.js';
import { RATE_SYMBOLS, type RateSymbol } from '../modules/quotes/rate-provider.js';
import { SweepEngine, type SweepStep } from '../modules/sweeps/sweep.engine.js';
import type { JobDefinition } from './scheduler.js';

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((ok) => {
    const onAbort = () => (clearTimeout(t), ok());
    const t = setTimeout(() => (signal.removeEventListener('abort', onAbort), ok()), ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });

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
    rate: async (symbol) => ((RATE_SYMBOLS as readonly string[]).includes(symbol) ? parseDecimal((await app.rates.getRate(symbol as RateSymbol)).rate, RATE_SCALE) : null),
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

/**
 * One recurring sweep job per (environment, network). Agenda's lock gives each to one worker at a
 * time; a run ticks every SWEEP_POLL_MS for WATCH_RUN_MS and hands over. Every tick is idempotent and
 * resumes from the database, so a run killed anywhere is finished by the next (any worker's).
 */
export function sweepJobs(targets: WatchedNetwork[], lockMs: number): JobDefinition[] {
  return targets.map((target) => {
    let engine: SweepEngine | undefined;
    return {
      name: `sweep:${target.environment}:${target.network}`,
      every: '5 seconds',
      concurrency: 1,
      lockLifetimeMs: lockMs,
      handler: async (app, job, signal) => {
        engine ??= createSweepEngine(app, target);
        if (!engine.active) return;
        const until = Date.now() + app.config.WATCH_RUN_MS;
        while (!signal.aborted && Date.now() < until) {
          try {
            await engine.tick(app.orm.em.fork());
          } catch (err) {
            app.log.warn({ err: err instanceof Error ? err.message : String(err), network: target.network, environment: target.environment }, 'sweep tick failed; retrying');
          }
          await job.touch().catch(() => undefined);
          await sleep(app.config.SWEEP_POLL_MS, signal);
        }
      },
    };
  });
}
