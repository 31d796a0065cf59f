/** Unix seconds, the unit of every timestamp in the legacy REST dialect and the webhook payloads. */
export function unix(d: Date): number;
export function unix(d: Date | null): number | null;
export function unix(d: Date | null): number | null {
  return d ? Math.floor(d.getTime() / 1000) : null;
}
