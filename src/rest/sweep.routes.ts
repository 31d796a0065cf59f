import type { App } from '../app.js';
import type { RestRoute } from './routes.js';
import {
  sweepBalanceView,
  sweepHoldView,
  sweepRequestView,
  sweepSettingsView,
  sweepView,
  toListSweeps,
  toSetSweepSettings,
  toSweepHolds,
  toSweepNow,
} from './sweep.mappers.js';

/**
 * Sweeps (environment-scoped; docs/api.md "Sweeps"). The merchant's server (API key of the path's
 * environment) or the dashboard (Bearer JWT) may ask for a sweep and read balances, history and the
 * schedule; only an owner or admin dashboard session changes the schedule.
 */
export function sweepRoutes(app: App): RestRoute[] {
  return [
    {
      method: 'POST',
      url: '/merchant/sweeps',
      auth: 'merchant',
      limit: 'merchant',
      handler: async (ctx, req) => ({
        status: 202,
        message: 'Sweep requested',
        data: { requests: (await app.sweeps.sweepNow(ctx, toSweepNow(ctx, req.body))).map(sweepRequestView) },
      }),
    },
    {
      method: 'GET',
      url: '/merchant/sweeps',
      auth: 'merchant',
      limit: 'merchant',
      handler: async (ctx, req) => {
        const page = await app.sweeps.list(ctx, toListSweeps(ctx, req.query));
        return { data: { ...page, items: page.items.map(sweepView) } };
      },
    },
    {
      method: 'GET',
      url: '/merchant/sweeps/balances',
      auth: 'merchant',
      limit: 'merchant',
      handler: async (ctx) => ({ data: (await app.sweeps.balances(ctx, { environment: ctx.environment! })).map(sweepBalanceView) }),
    },
    {
      method: 'GET',
      url: '/merchant/sweeps/held',
      auth: 'merchant',
      limit: 'merchant',
      handler: async (ctx, req) => ({ data: { items: (await app.sweeps.holds(ctx, toSweepHolds(ctx, req.query))).map(sweepHoldView) } }),
    },
    {
      method: 'GET',
      url: '/merchant/sweeps/settings',
      auth: 'merchant',
      limit: 'merchant',
      handler: async (ctx) => ({ data: sweepSettingsView(await app.sweeps.settings(ctx, { environment: ctx.environment! })) }),
    },
    {
      method: 'PUT',
      url: '/merchant/sweeps/settings',
      auth: 'dashboard',
      limit: 'auth',
      handler: async (ctx, req) => ({
        message: 'Sweep schedule updated',
        data: sweepSettingsView(await app.sweeps.setSettings(ctx, toSetSweepSettings(ctx, req.body))),
      }),
    },
  ];
}
