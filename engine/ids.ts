// Sortable unique ids: `<prefix>_<12 hex ms timestamp><4 hex counter><12 hex random>`.
// Ids made by one process are strictly increasing, so ordering by id equals creation order;
// `observe` lets recovery move the clock past ids already in the log (clock skew across restarts).
const HEX = '0123456789abcdef';

let lastMs = 0;
let counter = 0;

function hex(value: number, digits: number): string {
  let out = '';
  for (let i = 0; i < digits; i++) {
    out = HEX[value % 16] + out;
    value = Math.floor(value / 16);
  }
  return out;
}

function randomHex(digits: number): string {
  const bytes = crypto.getRandomValues(new Uint8Array(Math.ceil(digits / 2)));
  let out = '';
  for (const b of bytes) out += HEX[b >> 4] + HEX[b & 15];
  return out.slice(0, digits);
}

export function newId(prefix: string): string {
  let now = Date.now();
  if (now <= lastMs) {
    now = lastMs;
    counter++;
    if (counter > 0xffff) {
      // 65k ids in one millisecond: borrow the next millisecond.
      now = ++lastMs;
      counter = 0;
    }
  } else {
    counter = 0;
  }
  lastMs = now;
  return `${prefix}_${hex(now, 12)}${hex(counter, 4)}${randomHex(12)}`;
}

/** Make later ids sort after `id` (called while replaying the log). */
export function observeId(id: string): void {
  const us = id.indexOf('_');
  if (us < 0) return;
  const ms = parseInt(id.slice(us + 1, us + 13), 16);
  const c = parseInt(id.slice(us + 13, us + 17), 16);
  if (!Number.isFinite(ms)) return;
  if (ms > lastMs || (ms === lastMs && c > counter)) {
    lastMs = ms;
    counter = c;
  }
}

/** Where the id clock stands: every id made or observed so far sorts at or before it (an item dump keeps it). */
export function idClock(): { ms: number; counter: number } {
  return { ms: lastMs, counter };
}

/** Make later ids sort after every id made before `clock` was read (idClock; a restart from an item dump). */
export function observeIdClock(clock: { ms: number; counter: number }): void {
  if (clock.ms > lastMs || (clock.ms === lastMs && clock.counter > counter)) {
    lastMs = clock.ms;
    counter = clock.counter;
  }
}

const ID_SHAPE = /^[a-z]{2,4}_[0-9a-f]{28}$/;

export function isIdOf(prefix: string, id: string): boolean {
  return id.length === prefix.length + 29 && id.startsWith(`${prefix}_`) && ID_SHAPE.test(id);
}
