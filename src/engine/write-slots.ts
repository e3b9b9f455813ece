/**
 * What bounds the writes of one worker process: the requests in flight at
 * once across every chunk the process holds (a chunk nearing its end leaves
 * its slots to the next). Their pace is the platform client's (its pacer).
 */

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
