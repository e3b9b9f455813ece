/**
 * Counts of served requests by method, route template and status, for
 * `/__sandbox/stats`, and the latest requests one by one with the time each
 * arrived, for `/__sandbox/requests`. A connection cut by drop-after-commit
 * counts as status 0.
 */
export interface StatsEntry {
  method: string;
  route: string;
  status: number;
  count: number;
}

/** One served request: when it arrived (ms since the Unix epoch) and how it was answered. */
export interface RequestEntry {
  at: number;
  method: string;
  route: string;
  status: number;
  /** The `Retry-After` of a 429, in seconds. */
  retryAfter?: number;
}

/** How many requests `/__sandbox/requests` keeps, the latest. */
export const REQUEST_LOG_SIZE = 10_000;

export class Stats {
  private readonly counts = new Map<string, StatsEntry>();
  private readonly log: RequestEntry[] = [];

  /** `at`: when the request arrived (ms since the Unix epoch). */
  record(method: string, route: string, status: number, at: number, retryAfter?: number): void {
    const key = `${method} ${status} ${route}`;
    const entry = this.counts.get(key);
    if (entry) entry.count++;
    else this.counts.set(key, { method, route, status, count: 1 });
    this.log.push({ at, method, route, status, ...(retryAfter !== undefined && { retryAfter }) });
    if (this.log.length > REQUEST_LOG_SIZE * 2)
      this.log.splice(0, this.log.length - REQUEST_LOG_SIZE);
  }

  /** The latest requests, in the order they were answered. */
  requests(): { requests: RequestEntry[] } {
    return { requests: this.log.slice(-REQUEST_LOG_SIZE).map((e) => ({ ...e })) };
  }

  snapshot(): { requests: StatsEntry[] } {
    const requests = [...this.counts.values()].map((e) => ({ ...e }));
    requests.sort(
      (a, b) =>
        a.route.localeCompare(b.route) || a.method.localeCompare(b.method) || a.status - b.status,
    );
    return { requests };
  }
}
