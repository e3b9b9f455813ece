/**
 * The writer lease through the whole engine (src/queue/writer-lease.ts):
 * of two worker services on one prefix, the one holding the lease takes
 * every write chunk and the other none; when the writer stops, the other
 * takes over; and a writer short of its pace calls the other to help.
 * Chunks are counted by each service's write worker's own `completed`
 * events, rows by the sandbox.
 */
import { describe, expect, it } from 'vitest';
import { startWorkerService, type WorkerService } from '../../src/engine/worker-service.js';
import { createMetrics } from '../../src/ops/metrics.js';
import { createShutdown } from '../../src/ops/shutdown.js';
import { LEASE_MS, TICK_MS, type PaceSample } from '../../src/queue/writer-help.js';
import {
  WriterLease,
  writerHelpKey,
  writerKey,
  type WriteRole,
} from '../../src/queue/writer-lease.js';
import {
  companyRows,
  hubspotCells,
  hubspotJob,
  HUBSPOT_HEADER,
  useEngines,
  type EngineHarness,
} from '../harness/engine.js';
import { waitUntil } from '../harness/cli.js';
import { captureLogger } from '../harness/log-capture.js';
import { useRedis } from '../harness/redis.js';

const engine = useEngines();

/** A second worker service on the harness's prefix, as a second `crm-sync worker` would be. */
async function secondService(h: EngineHarness, spareCores?: () => number) {
  const metrics = createMetrics();
  const { logger, lines } = captureLogger('info');
  const shutdown = createShutdown(logger, { deadlineMs: 5_000 });
  const service = await startWorkerService({
    config: h.config,
    logger,
    shutdown,
    metrics,
    jobsDir: h.jobsDir,
    settings: { pollMs: 50 },
    ...(spareCores && { spareCores }),
  });
  const writing = async () =>
    /^crm_sync_writing (\d)$/m.exec(await metrics.registry.metrics())?.[1];
  return { service, lines, writing, stop: () => shutdown.shutdown('test') };
}

/** Counts the write chunks `service` completes from now on. */
function chunksOf(service: WorkerService): { count: number } {
  const seen = { count: 0 };
  service.writeWorker.on('completed', () => seen.count++);
  return seen;
}

function companiesJob(h: EngineHarness, name: string, rows: number, first: number) {
  const csv = h.writeCsv(`${name}.csv`, HUBSPOT_HEADER, companyRows(rows, first).map(hubspotCells));
  h.writeJob(name, hubspotJob(csv));
}

describe('the writer lease', () => {
  it('one of two worker services writes; the other stands by, and takes over when it stops', async () => {
    const h = await engine({ deferWorkers: true });
    companiesJob(h, 'first', 300, 5_000_001);
    companiesJob(h, 'second', 300, 6_000_001);
    const a = await h.startWorkers();
    const b = await secondService(h);
    try {
      expect(a.writerLease.writer).toBe(true);
      expect(b.service.writerLease.writer).toBe(false);
      expect(await h.producer.redis.get(writerKey(h.prefix))).toBe(a.writerLease.token);
      expect(await b.writing()).toBe('0');
      const [ofA, ofB] = [chunksOf(a), chunksOf(b.service)];

      const first = await h.runJob('first');
      expect(first.status).toBe('completed');
      expect(first.counts.created).toBe(300);
      expect(ofA.count).toBeGreaterThan(0);
      expect(ofB.count).toBe(0);
      expect((await h.dump()).companies).toHaveLength(300);

      // The writer stops and gives the lease up: the other holds it at its next tick.
      await h.stopWorkers();
      await waitUntil(
        () => b.service.writerLease.writer,
        'the second service writes',
        2 * TICK_MS + 500,
        50,
      );
      expect(await b.writing()).toBe('1');
      expect(await h.producer.redis.get(writerKey(h.prefix))).toBe(b.service.writerLease.token);
      const runId = await h.enqueue('second');
      const second = await h.waitForRun(runId);
      expect(second.status).toBe('completed');
      expect(second.counts.created).toBe(300);
      expect(ofB.count).toBeGreaterThan(0);
      expect((await h.dump()).companies).toHaveLength(600);
    } finally {
      await b.stop();
    }
    // Its holder stopped: nobody holds the lease.
    expect(await h.producer.redis.exists(writerKey(h.prefix))).toBe(0);
  });

  it('a writer short of its pace calls the other to help: together at the limit, no 429', async () => {
    // Six writes in flight of 100 ms at least: under 60/s a service, against a pace of 97/s
    // that the sandbox enforces as a sliding window of 100/s.
    const { logger, lines } = captureLogger('info');
    const h = await engine({
      deferWorkers: true,
      logger,
      sandbox: { latencyMs: 100, rateLimit: 100 },
      env: { PLATFORM_RATE_LIMIT: '100', WRITE_CONCURRENCY: '6' },
    });
    const ROWS = 1_000;
    companiesJob(h, 'slow', ROWS, 5_000_001);
    const a = await h.startWorkers();
    // Its machine's idle CPU as a second machine's would be: the tests' own leaves little.
    const b = await secondService(h, () => 2);
    try {
      expect(a.writerLease.writer).toBe(true);
      const [ofA, ofB] = [chunksOf(a), chunksOf(b.service)];
      const run = await h.runJob('slow', { timeoutMs: 60_000 });
      expect(run.status).toBe('completed');
      expect(run.counts.created).toBe(ROWS);
      expect((await h.dump()).companies).toHaveLength(ROWS);
      expect(lines.map((l) => l.msg)).toContain(
        'writer behind its pace: worker processes with idle CPU help',
      );
      expect(b.lines.filter((l) => l.msg === 'taking write chunks').map((l) => l.why)).toEqual([
        'help',
      ]);
      expect(ofA.count).toBeGreaterThan(0);
      expect(ofB.count).toBeGreaterThan(0);
      // Helped (from 360 writes at most: 6 s at under 60/s), writes went faster than one
      // service can send them, and none was refused: both shared the one pace.
      const posts = (await h.requests()).filter((r) => r.method === 'POST');
      expect(posts.filter((r) => r.status === 429)).toEqual([]);
      const helped = posts.filter((r) => r.status === 200).slice(ROWS * 0.5, ROWS * 0.85);
      const rate = (helped.length - 1) / ((helped.at(-1)!.at - helped[0]!.at) / 1_000);
      expect(rate).toBeGreaterThan(70);
      // No write waits: the call is withdrawn and the helper stands by again.
      await waitUntil(
        async () => (await b.writing()) === '0',
        'the helper stands by',
        3 * TICK_MS,
        50,
      );
      expect(await h.producer.redis.exists(writerHelpKey(h.prefix))).toBe(0);
      expect(b.service.writerLease.writer).toBe(false);
    } finally {
      await b.stop();
    }
  });
});

describe('WriterLease on Redis: roles by the lease, the call for help and idle CPU', () => {
  const { redis, prefix } = useRedis();

  /** A lease whose roles are recorded, its pace and idle cores set by the test. */
  function lease(spare: { cores: number }, pace: Partial<PaceSample> = {}) {
    const roles: [WriteRole, string][] = [];
    let taken = 0;
    const l = new WriterLease({
      redis,
      prefix,
      spareCores: () => spare.cores,
      sample: async () => {
        taken += 100;
        return {
          at: performance.now(),
          waiting: 5,
          taken,
          rate: 100,
          throttled: 0,
          answered: taken,
          ...pace,
        };
      },
      onRole: async (role, why) => {
        roles.push([role, why]);
      },
    });
    return { l, roles };
  }
  const tick = () => new Promise((r) => setTimeout(r, TICK_MS + 300));

  it('stands by unless called with a core idle; once helping, helps while called', async () => {
    // Another process writes, and calls for help when the test says.
    await redis.set(writerKey(prefix), 'elsewhere', 'PX', 60_000);
    const spare = { cores: 0 };
    const b = lease(spare);
    try {
      await b.l.start();
      expect(b.roles).toEqual([['stand by', 'none']]);
      // Called for, with no idle core: it stays standing by.
      await redis.set(writerHelpKey(prefix), 'elsewhere', 'PX', 60_000);
      await tick();
      expect(b.roles).toEqual([['stand by', 'none']]);
      // Half a core idle: it helps, and goes on helping once its writes take that core.
      spare.cores = 0.5;
      await tick();
      expect(b.roles.at(-1)).toEqual(['write', 'help']);
      spare.cores = 0;
      await tick();
      expect(b.roles).toHaveLength(2);
      // The call withdrawn: it stands by again.
      await redis.del(writerHelpKey(prefix));
      await tick();
      expect(b.roles.at(-1)).toEqual(['stand by', 'none']);
      expect(b.roles).toHaveLength(3);
    } finally {
      await b.l.stop();
    }
    // It never held the lease: the other's is left alone.
    expect(await redis.get(writerKey(prefix))).toBe('elsewhere');
    await redis.del(writerKey(prefix));
  });

  it('takes a lease that lapsed, stands by once it is taken, and gives it up when it stops', async () => {
    const a = lease({ cores: 0 });
    const b = lease({ cores: 0 });
    try {
      await a.l.start();
      await b.l.start();
      expect([a.roles, b.roles]).toEqual([[['write', 'lease']], [['stand by', 'none']]]);
      expect(await redis.pttl(writerKey(prefix))).toBeGreaterThan(LEASE_MS - 1_000);
      // Another process holds it now (a's lapsed while it hung): a stands by at its next tick.
      await redis.set(writerKey(prefix), 'elsewhere', 'PX', 60_000);
      await tick();
      expect(a.roles.at(-1)).toEqual(['stand by', 'none']);
      expect(b.roles).toHaveLength(1);
      // That one's lapses: the first to tick takes it, the other stands by.
      await redis.del(writerKey(prefix));
      await tick();
      const holder = (await redis.get(writerKey(prefix))) === a.l.token ? a : b;
      const other = holder === a ? b : a;
      expect(await redis.get(writerKey(prefix))).toBe(holder.l.token);
      expect(holder.roles.at(-1)).toEqual(['write', 'lease']);
      expect(other.roles.at(-1)).toEqual(['stand by', 'none']);
      // The holder stops: the other holds the lease at its next tick.
      await holder.l.stop();
      await tick();
      expect(other.roles.at(-1)).toEqual(['write', 'lease']);
      expect(await redis.get(writerKey(prefix))).toBe(other.l.token);
    } finally {
      await a.l.stop();
      await b.l.stop();
    }
    expect(await redis.exists(writerKey(prefix))).toBe(0);
  });

  it('carries a role out again at the next tick when it failed', async () => {
    await redis.set(writerKey(prefix), 'elsewhere', 'PX', 60_000);
    let failures = 1;
    let tries = 0;
    const done: WriteRole[] = [];
    const l = new WriterLease({
      redis,
      prefix,
      spareCores: () => 2,
      sample: async () => {
        throw new Error('a standing-by process is never sampled');
      },
      onRole: async (role) => {
        tries++;
        if (role === 'write' && failures-- > 0) throw new Error('resume failed');
        done.push(role);
      },
    });
    try {
      await l.start();
      await redis.set(writerHelpKey(prefix), 'elsewhere', 'PX', 60_000);
      await waitUntil(() => tries === 2, 'the first try to write', 3 * TICK_MS, 50);
      expect(done).toEqual(['stand by']);
      await waitUntil(() => done.length === 2, 'a second try', 3 * TICK_MS, 50);
      expect(done).toEqual(['stand by', 'write']);
      expect(tries).toBe(3);
    } finally {
      await l.stop();
      await redis.del(writerKey(prefix), writerHelpKey(prefix));
    }
  });
});
