/**
 * Prometheus metrics: a registry of our own (never prom-client's global one,
 * so tests and embedders can make as many as they like), the instruments the
 * engine increments, and queue depth read from BullMQ on each scrape.
 * Labels stay low-cardinality: job definitions, outcomes, statuses; never ids.
 */
import type { Queue } from 'bullmq';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** Job states reported as queue depth. */
export const DEPTH_STATES = ['waiting', 'active', 'delayed', 'prioritized', 'failed'] as const;

/** What `watchQueues` needs of a queue; a BullMQ Queue has it. */
export type DepthSource = Pick<Queue, 'name' | 'getJobCounts'>;

export interface Metrics {
  registry: Registry;
  /** Rows read from CRM exports. Labels: job. */
  rowsRead: Counter<'job'>;
  /** Records by planned or final outcome (created, updated, unchanged, invalid, conflict, rejected, failed). */
  records: Counter<'job' | 'outcome'>;
  /** Platform API calls by operation (e.g. `POST /companies`) and HTTP status (or `network`, `timeout`). */
  writes: Counter<'operation' | 'status'>;
  /** 429 answers from the platform. */
  rateLimited: Counter<'operation'>;
  /** Requests per second the pacer spaces platform requests at (learned with `auto`), all replicas together. */
  platformRate: Gauge;
  /** 1 while this process takes write chunks (it holds the writer lease, or helps), 0 while it stands by. */
  writing: Gauge;
  /** Jobs per queue and state, read from Redis on each scrape. */
  queueDepth: Gauge<'queue' | 'state'>;
  /** Wall time of finished runs, seconds. Labels: job, status. */
  runDuration: Histogram<'job' | 'status'>;
  /** Alerts given up after their last delivery attempt. Labels: rule (the alert's kind). */
  alertsDropped: Counter<'rule'>;
  /** Reports the depth of these queues on every scrape (replaces any earlier list). */
  watchQueues(queues: readonly DepthSource[]): void;
}

/**
 * How often (ms) the event loop's delay is sampled for the `eventloop_lag`
 * metrics. prom-client's 10 ms wakes every process 100 times a second, idle
 * or not: about 8 ms of CPU a second each, which every extra worker process
 * paid again (docs/BENCHMARKS.md, sync-scale); a scrape still finds
 * hundreds of samples at this one.
 */
export const EVENT_LOOP_SAMPLE_MS = 100;

export function createMetrics(opts: { defaultMetrics?: boolean } = {}): Metrics {
  const registry = new Registry();
  if (opts.defaultMetrics !== false)
    collectDefaultMetrics({
      register: registry,
      prefix: 'crm_sync_',
      eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS,
    });

  let watched: readonly DepthSource[] = [];
  const queueDepth = new Gauge<'queue' | 'state'>({
    name: 'crm_sync_queue_depth',
    help: 'Jobs in each queue by state, read from Redis when scraped',
    labelNames: ['queue', 'state'],
    registers: [registry],
    async collect() {
      const counts = await Promise.all(watched.map((q) => q.getJobCounts(...DEPTH_STATES)));
      this.reset();
      watched.forEach((q, i) => {
        for (const state of DEPTH_STATES)
          this.set({ queue: q.name, state }, counts[i]?.[state] ?? 0);
      });
    },
  });

  return {
    registry,
    rowsRead: new Counter({
      name: 'crm_sync_rows_read_total',
      help: 'Rows read from CRM exports',
      labelNames: ['job'],
      registers: [registry],
    }),
    records: new Counter({
      name: 'crm_sync_records_total',
      help: 'Records by outcome',
      labelNames: ['job', 'outcome'],
      registers: [registry],
    }),
    writes: new Counter({
      name: 'crm_sync_platform_requests_total',
      help: 'Platform API calls by operation and HTTP status',
      labelNames: ['operation', 'status'],
      registers: [registry],
    }),
    rateLimited: new Counter({
      name: 'crm_sync_platform_rate_limited_total',
      help: '429 answers received from the platform',
      labelNames: ['operation'],
      registers: [registry],
    }),
    platformRate: new Gauge({
      name: 'crm_sync_platform_rate',
      help: 'Requests per second the pacer lets through to the platform, all replicas together (learned with PLATFORM_RATE_LIMIT=auto)',
      registers: [registry],
    }),
    writing: new Gauge({
      name: 'crm_sync_writing',
      help: 'Whether this process takes write chunks: 1 while it holds the writer lease or the writer called for help, 0 while it stands by',
      registers: [registry],
    }),
    queueDepth,
    runDuration: new Histogram({
      name: 'crm_sync_run_duration_seconds',
      help: 'Wall time of finished runs',
      labelNames: ['job', 'status'],
      buckets: [1, 5, 15, 60, 300, 900, 1800, 3600, 7200, 14400, 43200],
      registers: [registry],
    }),
    alertsDropped: new Counter({
      name: 'crm_sync_alerts_dropped_total',
      help: 'Alerts not delivered after their last attempt, by rule (failed, stopped, rejected-above, missed)',
      labelNames: ['rule'],
      registers: [registry],
    }),
    watchQueues(queues) {
      watched = [...queues];
    },
  };
}

let processWide: Metrics | undefined;

/** The process's one set of metrics, created on first use; what the engine increments and /metrics serves. */
export function processMetrics(): Metrics {
  return (processWide ??= createMetrics());
}
