/**
 * Calls that arrive while the previous batch is on its way go together in
 * the next: `add(item)` resolves with the item's answer from `run(items)`,
 * one call per batch. The first item of a batch waits `waitMs` (at least the
 * end of the event loop's turn), so that what arrives meanwhile joins it. A batch that
 * fails rejects each of its items with the error.
 */
export class Batcher<In, Out> {
  private queue: { item: In; done: (out: Out) => void; fail: (e: unknown) => void }[] = [];
  private running: Promise<void> | undefined;

  constructor(
    private readonly run: (items: In[]) => Promise<Out[]>,
    private readonly maxBatch = 200,
    private readonly waitMs = 0,
    /** Called when the last batch is done and nothing waits. */
    private readonly idle: () => void = () => undefined,
  ) {}

  /** Whether items wait or a batch is on its way. */
  get busy(): boolean {
    return this.running !== undefined;
  }

  add(item: In): Promise<Out> {
    return new Promise<Out>((done, fail) => {
      this.queue.push({ item, done, fail });
      this.running ??= this.drain();
    });
  }

  private async drain(): Promise<void> {
    await new Promise<void>((resolve) =>
      this.waitMs > 0 ? setTimeout(resolve, this.waitMs) : setImmediate(resolve),
    );
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, this.maxBatch);
      try {
        const out = await this.run(batch.map((b) => b.item));
        batch.forEach((b, n) => b.done(out[n]!));
      } catch (err) {
        for (const b of batch) b.fail(err);
      }
    }
    this.running = undefined;
    this.idle();
  }
}
