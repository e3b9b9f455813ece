/**
 * The buckets of one kind (claims, seen ids) that this process gave their TTL, for the run it
 * planned last: a bucket's TTL is set once per planning pass and process, not on every write.
 * Calls of one kind go one at a time (a pass sends its batches' claims, and their seen ids, one
 * after the other).
 */
export class BucketTtls {
  private runId: string | undefined;
  private state: Uint8Array;

  constructor(private readonly count: number) {
    this.state = new Uint8Array(count);
  }

  /**
   * For the call about to go: '1' for each bucket it is to give the TTL to (the first time the
   * bucket appears), '0' for the rest, as text. Those are marked 2 until `sent` or `failed`.
   */
  flags(runId: string, buckets: readonly number[]): string {
    if (this.runId !== runId) {
      this.runId = runId;
      this.state = new Uint8Array(this.count);
    }
    const given = this.state;
    const out = Buffer.allocUnsafe(buckets.length);
    buckets.forEach((b, n) => {
      const now = given[b] === 0;
      if (now) given[b] = 2;
      out[n] = now ? 49 : 48;
    });
    return out.toString('latin1');
  }

  /** The call went through: its buckets have their TTL. */
  sent(buckets: readonly number[]): void {
    for (const b of buckets) this.state[b] = 1;
  }

  /** The call failed: the buckets it was to give the TTL to are flagged again next time. */
  failed(buckets: readonly number[]): void {
    for (const b of buckets) if (this.state[b] === 2) this.state[b] = 0;
  }

  /** A new planning pass began: every bucket is to get its TTL again. */
  forgetAll(): void {
    this.state.fill(0);
  }
}
