import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

/** `order_events` is the outbox webhooks are built from: one insert, in one file, so every row has the same shape. */
const SRC = resolve(__dirname, '../../src');

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

it('only src/modules/events/order-event.writer.ts inserts into order_events', () => {
  const writers = files(SRC)
    .filter((f) => /insert\s+into\s+"?order_events"?/i.test(readFileSync(f, 'utf8')))
    .map((f) => relative(SRC, f));
  expect(writers).toEqual(['modules/events/order-event.writer.ts']);
});

it('only src/modules/events/merchant-event.writer.ts inserts into merchant_events', () => {
  const writers = files(SRC)
    .filter((f) => /insert\s+into\s+"?merchant_events"?/i.test(readFileSync(f, 'utf8')))
    .map((f) => relative(SRC, f));
  expect(writers).toEqual(['modules/events/merchant-event.writer.ts']);
});
