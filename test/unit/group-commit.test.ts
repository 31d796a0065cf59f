import { GroupCommit, type Outcome, type Timers } from '../../src/common/group-commit';

/*
 * The group-commit rules (src/common/group-commit.ts), with a hand-driven `run` (each batch answers
 * when the test says so) and hand-driven timers: no IO, no real time.
 */

interface Batch {
  items: number[];
  answer(outcomes?: Outcome<string>[]): void;
  fail(e: unknown): void;
}

function harness(opts: { windowMs: number; maxBatch: number; maxInFlight: number }) {
  const batches: Batch[] = [];
  const timers: { fn: () => void; ms: number; cleared: boolean }[] = [];
  const fakeTimers: Timers = {
    set: (fn, ms) => {
      const t = { fn, ms, cleared: false };
      timers.push(t);
      return t;
    },
    clear: (h) => {
      (h as { cleared: boolean }).cleared = true;
    },
  };
  const gc = new GroupCommit<number, string>(
    (items) =>
      new Promise<Outcome<string>[]>((resolve, reject) => {
        batches.push({ items, answer: (o) => resolve(o ?? items.map((i) => ({ ok: true, value: `v${i}` }))), fail: reject });
      }),
    opts,
    fakeTimers,
  );
  const fireTimers = () => {
    for (const t of timers.splice(0)) if (!t.cleared) t.fn();
  };
  const liveTimers = () => timers.filter((t) => !t.cleared);
  return { gc, batches, fireTimers, liveTimers };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('GroupCommit', () => {
  it('sends a lone item at once, without waiting for a window', async () => {
    const h = harness({ windowMs: 2, maxBatch: 10, maxInFlight: 2 });
    const p = h.gc.submit(1);
    expect(h.batches.map((b) => b.items)).toEqual([[1]]);
    expect(h.liveTimers()).toHaveLength(0);
    h.batches[0]!.answer();
    await expect(p).resolves.toBe('v1');
  });

  it('items submitted straight from a caller’s answer (a microtask) find the slot free: the first goes at once, alone', async () => {
    const h = harness({ windowMs: 2, maxBatch: 10, maxInFlight: 1 });
    const next = h.gc.submit(1).then(() => Promise.all([2, 3, 4].map((i) => h.gc.submit(i))));
    h.batches[0]!.answer();
    await tick();
    expect(h.batches.map((b) => b.items)).toEqual([[1], [2]]);
    h.batches[1]!.answer();
    await tick();
    expect(h.batches.map((b) => b.items)).toEqual([[1], [2], [3, 4]]);
    h.batches[2]!.answer();
    await expect(next).resolves.toEqual(['v2', 'v3', 'v4']);
  });

  it('groups items arriving while a batch is in flight, and sends them after the window', async () => {
    const h = harness({ windowMs: 2, maxBatch: 10, maxInFlight: 2 });
    const first = h.gc.submit(1);
    const rest = [2, 3, 4].map((i) => h.gc.submit(i));
    expect(h.batches).toHaveLength(1);
    expect(h.liveTimers().map((t) => t.ms)).toEqual([2]);
    h.fireTimers();
    expect(h.batches.map((b) => b.items)).toEqual([[1], [2, 3, 4]]);
    h.batches[1]!.answer();
    await expect(Promise.all(rest)).resolves.toEqual(['v2', 'v3', 'v4']);
    h.batches[0]!.answer();
    await expect(first).resolves.toBe('v1');
  });

  it('sends a full batch at once, before the window ends', () => {
    const h = harness({ windowMs: 2, maxBatch: 3, maxInFlight: 2 });
    void h.gc.submit(1);
    [2, 3, 4].forEach((i) => void h.gc.submit(i));
    expect(h.batches.map((b) => b.items)).toEqual([[1], [2, 3, 4]]);
    expect(h.liveTimers()).toHaveLength(0);
  });

  it('never has more than maxInFlight batches running; what queued meanwhile goes when one finishes, in batches of at most maxBatch', async () => {
    const h = harness({ windowMs: 2, maxBatch: 3, maxInFlight: 2 });
    const all = Array.from({ length: 9 }, (_, i) => h.gc.submit(i));
    // 0 alone (nothing in flight), then a full batch 1-3; 4..8 wait for a slot.
    expect(h.batches.map((b) => b.items)).toEqual([[0], [1, 2, 3]]);
    h.fireTimers();
    expect(h.batches).toHaveLength(2);
    expect(h.gc.waiting).toBe(5);
    h.batches[0]!.answer();
    await tick();
    expect(h.batches.map((b) => b.items)).toEqual([[0], [1, 2, 3], [4, 5, 6]]);
    expect(h.gc.running).toBe(2);
    h.batches[1]!.answer();
    await tick();
    expect(h.batches[3]!.items).toEqual([7, 8]);
    h.batches[2]!.answer();
    h.batches[3]!.answer();
    await expect(Promise.all(all)).resolves.toEqual(Array.from({ length: 9 }, (_, i) => `v${i}`));
    expect(h.gc.running).toBe(0);
  });

  it('gives each item its own outcome: one rejected item does not fail its batch mates', async () => {
    const h = harness({ windowMs: 1, maxBatch: 10, maxInFlight: 2 });
    void h.gc.submit(0);
    const ps = [1, 2, 3].map((i) => h.gc.submit(i));
    h.fireTimers();
    const dup = new Error('duplicate 2');
    h.batches[1]!.answer([
      { ok: true, value: 'a' },
      { ok: false, error: dup },
      { ok: true, value: 'c' },
    ]);
    const settled = await Promise.allSettled(ps);
    expect(settled).toEqual([
      { status: 'fulfilled', value: 'a' },
      { status: 'rejected', reason: dup },
      { status: 'fulfilled', value: 'c' },
    ]);
  });

  it('settles nothing before run answers (acknowledged only after the commit)', async () => {
    const h = harness({ windowMs: 1, maxBatch: 10, maxInFlight: 1 });
    let done = false;
    void h.gc.submit(1).then(() => (done = true));
    await tick();
    expect(done).toBe(false);
    h.batches[0]!.answer();
    await tick();
    expect(done).toBe(true);
  });

  it('rejects every item of a batch whose run throws, or answers the wrong number of outcomes, and keeps going', async () => {
    const h = harness({ windowMs: 0, maxBatch: 10, maxInFlight: 1 });
    const a = h.gc.submit(1);
    const b = [2, 3].map((i) => h.gc.submit(i));
    h.batches[0]!.fail(new Error('connection lost'));
    await expect(a).rejects.toThrow('connection lost');
    await tick();
    expect(h.batches[1]!.items).toEqual([2, 3]);
    h.batches[1]!.answer([{ ok: true, value: 'only one' }]);
    for (const p of b) await expect(p).rejects.toThrow('1 outcomes for 2 items');
    const c = h.gc.submit(4);
    h.batches[2]!.answer();
    await expect(c).resolves.toBe('v4');
  });

  it('with windowMs 0, sends whenever a slot is free', () => {
    const h = harness({ windowMs: 0, maxBatch: 10, maxInFlight: 3 });
    [1, 2, 3, 4, 5].forEach((i) => void h.gc.submit(i));
    expect(h.batches.map((b) => b.items)).toEqual([[1], [2], [3]]);
    expect(h.gc.waiting).toBe(2);
  });

  it('refuses nonsensical options', () => {
    expect(() => new GroupCommit(async () => [], { windowMs: 1, maxBatch: 0, maxInFlight: 1 })).toThrow(RangeError);
    expect(() => new GroupCommit(async () => [], { windowMs: 1, maxBatch: 1, maxInFlight: 0 })).toThrow(RangeError);
  });
});
