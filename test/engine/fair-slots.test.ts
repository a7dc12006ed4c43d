// FairSlots: a semaphore shared by tenants with a per-tenant cap and round robin among waiting
// tenants (engine/workers/fair-slots.ts, used by the extraction lanes).
import { describe, expect, test } from 'bun:test';
import { FairSlots } from '../../engine/workers/fair-slots';

/** A task that runs until `finish()` is called; `started` tells whether it got a slot. */
function gate(slots: FairSlots, tenant: string, log: string[], name: string) {
  let finish!: () => void;
  const done = new Promise<void>((resolve) => (finish = resolve));
  const state = { started: false, finish: () => finish(), result: undefined as Promise<void> | undefined };
  state.result = slots.run(tenant, async () => {
    state.started = true;
    log.push(name);
    await done;
  });
  return state;
}

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

describe('FairSlots', () => {
  test('at most `size` tasks at once; the rest wait and run as slots free up', async () => {
    const slots = new FairSlots(2, 2);
    const log: string[] = [];
    const a = gate(slots, 'A', log, 'a1');
    const b = gate(slots, 'A', log, 'a2');
    const c = gate(slots, 'A', log, 'a3');
    await tick();
    expect([a.started, b.started, c.started]).toEqual([true, true, false]);
    expect(slots.busy).toBe(2);
    expect(slots.queued).toBe(1);
    a.finish();
    await a.result;
    await tick();
    expect(c.started).toBe(true);
    b.finish();
    c.finish();
    await Promise.all([b.result, c.result]);
    expect(slots.busy).toBe(0);
    expect(log).toEqual(['a1', 'a2', 'a3']);
  });

  test('a tenant holds at most `perTenant` slots, so another tenant gets one at once', async () => {
    const slots = new FairSlots(2, 1);
    const log: string[] = [];
    const a1 = gate(slots, 'A', log, 'a1');
    const a2 = gate(slots, 'A', log, 'a2'); // A is at its cap: waits though a slot is free
    await tick();
    expect([a1.started, a2.started]).toEqual([true, false]);
    expect(slots.heldBy('A')).toBe(1);
    const b1 = gate(slots, 'B', log, 'b1');
    await tick();
    expect(b1.started).toBe(true);
    a1.finish();
    await a1.result;
    await tick();
    expect(a2.started).toBe(true);
    a2.finish();
    b1.finish();
    await Promise.all([a2.result, b1.result]);
    expect(log).toEqual(['a1', 'b1', 'a2']);
  });

  test('waiting tenants take turns instead of first come, first served', async () => {
    const slots = new FairSlots(1);
    const log: string[] = [];
    const running = gate(slots, 'A', log, 'a0');
    const tasks = [
      gate(slots, 'A', log, 'a1'),
      gate(slots, 'A', log, 'a2'),
      gate(slots, 'A', log, 'a3'),
      gate(slots, 'B', log, 'b1'),
      gate(slots, 'B', log, 'b2'),
      gate(slots, 'C', log, 'c1'),
    ];
    await tick();
    expect(slots.queued).toBe(6);
    running.finish();
    await running.result;
    for (let i = 0; i < tasks.length; i++) {
      await tick();
      const now = tasks.filter((t) => t.started && !log.includes(`done ${tasks.indexOf(t)}`));
      expect(now.length).toBe(1);
      log.push(`done ${tasks.indexOf(now[0]!)}`);
      now[0]!.finish();
      await now[0]!.result;
    }
    expect(log.filter((l) => !l.startsWith('done'))).toEqual(['a0', 'a1', 'b1', 'c1', 'a2', 'b2', 'a3']);
  });

  test('a failing task gives its slot back', async () => {
    const slots = new FairSlots(1);
    await expect(slots.run('A', async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(slots.busy).toBe(0);
    expect(await slots.run('B', async () => 42)).toBe(42);
  });

  test('size and cap are at least 1, and the cap at most the size', () => {
    expect(new FairSlots(0).size).toBe(1);
    expect(new FairSlots(2, 0).perTenant).toBe(1);
    expect(new FairSlots(2, 5).perTenant).toBe(2);
  });
});
