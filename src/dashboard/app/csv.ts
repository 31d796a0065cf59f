import { currentSession, refresh } from './api';

/**
 * Downloads the orders CSV of the current filter from the export the gateway offers dashboards
 * (`GET /api/v2/{testnet|mainnet}/merchant/export/orders.csv`, the same filters as `orders`, streamed).
 */
export async function downloadOrdersCsv(env: 'SANDBOX' | 'PRODUCTION', filter: Record<string, string | undefined>): Promise<void> {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(filter)) if (v) q.set(k, v);
  const url = `/api/v2/${env === 'SANDBOX' ? 'testnet' : 'mainnet'}/merchant/export/orders.csv?${q}`;
  const get = () => fetch(url, { headers: { authorization: `Bearer ${currentSession()?.token ?? ''}` } });
  let res = await get();
  if (res.status === 401 && (await refresh())) res = await get();
  if (!res.ok) throw new Error(`CSV export: HTTP ${res.status}`);
  const blob = await res.blob();
  const name = /filename="([^"]+)"/.exec(res.headers.get('content-disposition') ?? '')?.[1] ?? 'orders.csv';
  const a = document.createElement('a');
  a.href = URL.createObjectURL(blob);
  a.download = name;
  a.id = 'csv-download';
  document.body.append(a);
  a.click();
  setTimeout(() => {
    URL.revokeObjectURL(a.href);
    a.remove();
  }, 1000);
}
