/**
 * The claim buckets each run's planning pass in this process has written to,
 * so that the claims' release names those buckets and not all
 * `CLAIM_BUCKETS` of them: a 100-row run claims into about 200 buckets, and
 * naming all 16,384 costs some 17 ms of CPU and holds the event loop 9 ms
 * (`npm run bench -- scratch`).
 *
 * A bucket is marked before the call that writes it goes out (a call whose
 * answer is lost may still have written) and is never unmarked, so the marks
 * are a superset of the buckets this process wrote for the run. Runs are kept
 * apart (a worker plans several at once) and at most `MAX_RUNS` of them are
 * remembered, the oldest forgotten first: a run with no marks here (planned
 * by another process, or forgotten) is released by naming every bucket.
 */
export class ClaimedBuckets {
  /** Per run, one bit a bucket; in the order the runs were first marked. */
  private readonly runs = new Map<string, Uint8Array>();

  constructor(
    private readonly count: number,
    private readonly maxRuns = MAX_RUNS,
  ) {}

  /** Marks the buckets a call for `runId` is about to write to. */
  mark(runId: string, buckets: readonly number[]): void {
    let bits = this.runs.get(runId);
    if (bits === undefined) {
      if (this.runs.size >= this.maxRuns) this.runs.delete(this.runs.keys().next().value!);
      bits = new Uint8Array(Math.ceil(this.count / 8));
      this.runs.set(runId, bits);
    }
    for (const b of buckets) bits[b >>> 3]! |= 1 << (b & 7);
  }

  /**
   * The buckets marked for `runId`, ascending, and forgets them; undefined
   * when this process has no marks of the run.
   */
  take(runId: string): number[] | undefined {
    const bits = this.runs.get(runId);
    if (bits === undefined) return undefined;
    this.runs.delete(runId);
    const out: number[] = [];
    for (let i = 0; i < bits.length; i++) {
      const byte = bits[i]!;
      if (byte === 0) continue;
      for (let j = 0; j < 8; j++) if (byte & (1 << j)) out.push(i * 8 + j);
    }
    return out;
  }
}

/**
 * Runs whose marks are kept: a worker plans up to four runs at once, and a
 * run cut off before its release leaves its marks until they are forgotten
 * (2 KiB each).
 */
export const MAX_RUNS = 64;
