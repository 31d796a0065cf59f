/**
 * A small Prometheus-style metrics registry (the project has no prom-client): gauges with labels,
 * rendered in the text exposition format. One registry per process; values are set by jobs and read
 * by `GET /metrics`.
 */
export class Gauge {
  private readonly values = new Map<string, { labels: Record<string, string>; value: number }>();

  constructor(
    readonly name: string,
    readonly help: string,
  ) {}

  set(labels: Record<string, string>, value: number): void {
    this.values.set(JSON.stringify(Object.entries(labels).sort()), { labels, value });
  }

  get(labels: Record<string, string>): number | undefined {
    return this.values.get(JSON.stringify(Object.entries(labels).sort()))?.value;
  }

  render(): string {
    const esc = (v: string) => v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} gauge`];
    for (const { labels, value } of this.values.values()) {
      const l = Object.entries(labels)
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([k, v]) => `${k}="${esc(v)}"`)
        .join(',');
      lines.push(`${this.name}${l ? `{${l}}` : ''} ${value}`);
    }
    return lines.join('\n');
  }
}

const gauges: Gauge[] = [];

/** Registers (once) and returns the gauge `name`. */
export function gauge(name: string, help: string): Gauge {
  const found = gauges.find((g) => g.name === name);
  if (found) return found;
  const g = new Gauge(name, help);
  gauges.push(g);
  return g;
}

/** Every registered gauge in the text exposition format. */
export function renderMetrics(): string {
  return gauges.map((g) => g.render()).join('\n') + '\n';
}
