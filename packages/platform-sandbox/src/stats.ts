/**
 * Counts of served requests by method, route template and status, for
 * `/__sandbox/stats`. A connection cut by drop-after-commit counts as status 0.
 */
export interface StatsEntry {
  method: string;
  route: string;
  status: number;
  count: number;
}

export class Stats {
  private readonly counts = new Map<string, StatsEntry>();

  record(method: string, route: string, status: number): void {
    const key = `${method} ${status} ${route}`;
    const entry = this.counts.get(key);
    if (entry) entry.count++;
    else this.counts.set(key, { method, route, status, count: 1 });
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
