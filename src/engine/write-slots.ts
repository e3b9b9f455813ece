/**
 * What bounds the writes of one worker process: `WriteSlots`, the requests
 * in flight at once across every chunk the process holds (a chunk nearing
 * its end leaves its slots to the next), and `SpacingGate`, which spaces
 * request starts evenly at the configured rate and holds them all while a
 * 429's Retry-After runs. The gate is the process's own pacing, used while
 * the platform client paces nothing itself; a client that paces every
 * request (shared by the replicas in Redis) makes it unnecessary.
 */
import { sleep } from '../sleep.js';

export class WriteSlots {
  private free: number;
  private readonly waiting: (() => void)[] = [];

  constructor(readonly size: number) {
    this.free = Math.max(1, Math.floor(size));
  }

  /** Waits for a free slot; call the returned function once to give it back. */
  async take(): Promise<() => void> {
    if (this.free > 0) this.free--;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    let given = false;
    return () => {
      if (given) return;
      given = true;
      const next = this.waiting.shift();
      if (next) next();
      else this.free++;
    };
  }
}

/** Request pacing as the write path sees it: wait for a start, and hold every start after a 429. */
export interface WritePacing {
  acquire(signal?: AbortSignal): Promise<void>;
  /** No request starts for `ms` (a 429's wait). */
  hold(ms: number): void;
}

export class SpacingGate implements WritePacing {
  private next = 0;
  private readonly intervalMs: number;

  constructor(
    rate: number,
    private readonly now: () => number = Date.now,
  ) {
    if (!(rate > 0)) throw new RangeError(`rate must be positive, got ${rate}`);
    this.intervalMs = 1_000 / rate;
  }

  async acquire(signal?: AbortSignal): Promise<void> {
    const now = this.now();
    const at = Math.max(now, this.next);
    this.next = at + this.intervalMs;
    // Sub-millisecond waits are not worth a timer: they even out over the next starts.
    if (at - now >= 1) await sleep(at - now, signal);
  }

  hold(ms: number): void {
    this.next = Math.max(this.next, this.now() + ms);
  }
}
