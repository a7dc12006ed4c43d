// A counting semaphore shared fairly by tenants (organizations): at most `size` tasks run at once,
// and at most `perTenant` of them belong to one tenant. Waiting tasks queue per tenant, in arrival
// order; when a slot frees up, the tenants take turns (round robin), so one tenant's backlog never
// holds back another tenant's next task for longer than one task of each tenant ahead of it.
// With `perTenant` below `size`, a slot is always left for a tenant that arrives while another
// tenant is busy — it never waits for that tenant's (possibly minutes-long) tasks at all; the
// price is that a lone tenant cannot use every slot.

export class FairSlots {
  readonly size: number;
  readonly perTenant: number;
  private free: number;
  /** Slots held, by tenant (tenants holding none are removed). */
  private readonly held = new Map<string, number>();
  /**
   * Tenants with tasks waiting, in turn order (a Map keeps insertion order: a tenant just served
   * goes to the back), each with its waiting tasks' wake-ups in arrival order.
   */
  private readonly waiting = new Map<string, (() => void)[]>();

  constructor(size: number, perTenant: number = size) {
    this.size = Math.max(1, Math.floor(size));
    this.perTenant = Math.min(this.size, Math.max(1, Math.floor(perTenant)));
    this.free = this.size;
  }

  /** Slots in use. */
  get busy(): number {
    return this.size - this.free;
  }

  /** Tasks waiting for a slot. */
  get queued(): number {
    let n = 0;
    for (const q of this.waiting.values()) n += q.length;
    return n;
  }

  /** Slots `tenant` holds now. */
  heldBy(tenant: string): number {
    return this.held.get(tenant) ?? 0;
  }

  /** Runs `task` once `tenant` gets a slot; the slot is given back when it settles. */
  async run<T>(tenant: string, task: () => Promise<T>): Promise<T> {
    await this.acquire(tenant);
    try {
      return await task();
    } finally {
      this.release(tenant);
    }
  }

  private acquire(tenant: string): Promise<void> {
    // Straight in when a slot is free, the tenant is under its cap and has nothing waiting (its
    // own earlier tasks go first). Other tenants waiting while a slot is free are at their cap.
    if (this.free > 0 && this.heldBy(tenant) < this.perTenant && !this.waiting.has(tenant)) {
      this.take(tenant);
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => {
      const queue = this.waiting.get(tenant);
      if (queue) queue.push(resolve);
      else this.waiting.set(tenant, [resolve]);
    });
  }

  private take(tenant: string): void {
    this.free--;
    this.held.set(tenant, this.heldBy(tenant) + 1);
  }

  private release(tenant: string): void {
    const n = this.heldBy(tenant) - 1;
    if (n > 0) this.held.set(tenant, n);
    else this.held.delete(tenant);
    this.free++;
    this.grant();
  }

  /** Hands free slots to waiting tenants in turn, skipping tenants at their cap. */
  private grant(): void {
    while (this.free > 0) {
      let next: string | undefined;
      for (const tenant of this.waiting.keys()) {
        if (this.heldBy(tenant) < this.perTenant) {
          next = tenant;
          break;
        }
      }
      if (next === undefined) return;
      const queue = this.waiting.get(next)!;
      const wake = queue.shift()!;
      this.waiting.delete(next);
      if (queue.length > 0) this.waiting.set(next, queue); // to the back of the line
      this.take(next);
      wake();
    }
  }
}
