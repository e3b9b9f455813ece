/**
 * The write queue's share between runs in Redis: the script
 * (src/queue/lua/fair-share-5.lua) decides as the pure rules of
 * src/queue/fair-share.ts do, for random sequences of chunks tagged and
 * landed, queue contents and backlogs asked for; and a real BullMQ write
 * queue, served by two workers on their own connections, serves runs
 * enqueued through `addInTurn` in their shares: two and three runs of
 * different sizes and weights, started while a backfill has all its chunks
 * waiting, each share within 10% of its weight's and the runs finishing
 * smallest first; a run that tags while another's chunks are on their way
 * to an empty queue goes beside them.
 */
import { Worker, type Job } from 'bullmq';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  assign,
  backlog,
  initialState,
  landed,
  observe,
  PRIORITY_LIMIT,
  REBASE_AT,
  ROUND,
  type FairState,
  type QueueView,
} from '../../src/queue/fair-share.js';
import { addInTurn, fairShareKey, writesWaiting } from '../../src/queue/fair-share-store.js';
import { createWriteQueue, QueueName, workerOptions } from '../../src/queue/queues.js';
import { closeRedis, createRedis } from '../../src/redis/connection.js';
import { callScript } from '../../src/redis/scripts.js';
import { useRedis } from '../harness/redis.js';

const { redis, prefix, url } = useRedis();

describe('the share script and the pure rules', () => {
  // The rounds' units runs propose: chunks at the most, at 20/s, at 7/s, and any.
  const units = fc.oneof(fc.constantFrom(50, 5, 2), fc.integer({ min: 1, max: 50 }));
  const ops = fc.array(
    fc.oneof(
      fc.record({
        kind: fc.constant('assign' as const),
        run: fc.constantFrom('a', 'b', 'c'),
        unit: units,
        weight: fc.oneof(fc.constant(1), fc.integer({ min: 1, max: 100 })),
        lines: fc.array(fc.oneof(fc.constant(50), fc.integer({ min: 1, max: 50 })), {
          maxLength: 6,
        }),
      }),
      fc.record({
        kind: fc.constant('backlog' as const),
        run: fc.constantFrom('a', 'b', 'c'),
        unit: units,
      }),
      fc.record({
        kind: fc.constant('push' as const),
        priority: fc.oneof(fc.integer({ min: 1, max: 40 }), fc.constant(PRIORITY_LIMIT)),
      }),
      fc.record({ kind: fc.constant('pop' as const) }),
      fc.record({
        kind: fc.constantFrom('delayed' as const, 'wait' as const, 'active' as const),
        on: fc.boolean(),
      }),
      fc.record({ kind: fc.constant('late' as const), idleLong: fc.boolean() }),
      fc.record({
        kind: fc.constant('landed' as const),
        run: fc.constantFrom('a', 'b', 'c'),
        unit: units,
      }),
      // A run whose chunks went on their way ON_THE_WAY_MS ago or more, and never landed.
      fc.record({ kind: fc.constant('stale' as const), run: fc.constantFrom('a', 'b', 'c') }),
      fc.record({ kind: fc.constant('near-limit' as const) }),
    ),
    { minLength: 1, maxLength: 40 },
  );

  it('decide alike, step by step', async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(ops, async (steps) => {
        const base = `${prefix}:eq${n++}`;
        const keys = ['share', 'prioritized', 'delayed', 'wait', 'active'].map(
          (k) => `${base}:${k}`,
        );
        const [shareKey, prioritized, delayed, wait, active] = keys as [
          string,
          string,
          string,
          string,
          string,
        ];
        let model: FairState = initialState();
        // The queue as the model sees it: [priority, counter] of each chunk waiting.
        const waiting: [number, number][] = [];
        const flags = { delayed: false, wait: false, active: false };
        let counter = 0;
        const redisNow = async () => {
          const [s, us] = await redis.time();
          return Number(s) * 1000 + Math.floor(Number(us) / 1000);
        };
        const view = (now: number): QueueView => {
          const head = waiting.length > 0 ? Math.min(...waiting.map((w) => w[0])) : undefined;
          const idle = head === undefined && !flags.delayed && !flags.wait && !flags.active;
          return head === undefined ? { idle, now } : { head, idle, now };
        };
        for (const step of steps) {
          switch (step.kind) {
            case 'push':
              waiting.push([step.priority, counter]);
              await redis.zadd(prioritized, step.priority * 2 ** 32 + counter++, `j${counter}`);
              break;
            case 'pop': {
              const [first] = await redis.zpopmin(prioritized);
              if (first === undefined) break;
              waiting.sort((x, y) => x[0] - y[0] || x[1] - y[1]).shift();
              break;
            }
            case 'delayed':
              flags.delayed = step.on;
              if (step.on) await redis.zadd(delayed, 1, 'd');
              else await redis.del(delayed);
              break;
            case 'wait':
            case 'active':
              flags[step.kind] = step.on;
              await redis.del(step.kind === 'wait' ? wait : active);
              if (step.on) await redis.rpush(step.kind === 'wait' ? wait : active, 'x');
              break;
            case 'late': {
              // Rounds near the renumbering, the last tag long ago or just now.
              const at = step.idleLong ? 0 : await redisNow();
              model = { ...model, v: REBASE_AT * ROUND + 7, at };
              await redis.hset(shareKey, 'v', model.v, 'at', at);
              break;
            }
            case 'stale':
              model = { ...model, landing: { ...model.landing, [step.run]: 0 } };
              await redis.hset(shareKey, `w:${step.run}`, 0);
              break;
            case 'near-limit':
              // Rounds two short of BullMQ's priority limit: tags soon pass it.
              model = { ...model, v: (PRIORITY_LIMIT - 2) * ROUND + 7 };
              await redis.hset(shareKey, 'v', model.v);
              break;
            case 'assign':
            case 'backlog':
            case 'landed': {
              const now = await redisNow();
              model = observe(model, view(now), step.unit);
              const args =
                step.kind === 'assign'
                  ? ['assign', step.run, step.unit, step.weight, ...step.lines]
                  : [step.kind, step.run, step.unit];
              const got = await callScript(redis, 'fair-share', ...keys, ...args);
              if (step.kind === 'assign') {
                const a = assign(model, step.run, step.lines, step.weight, now);
                expect(got).toEqual(a.priorities);
                // The script stamps its own clock: the same instant or a few ms on.
                const at = Number(await redis.hget(shareKey, 'at'));
                expect(at - now).toBeGreaterThanOrEqual(0);
                expect(at - now).toBeLessThan(1_000);
                model = { ...a.state, at, landing: { ...a.state.landing, [step.run]: at } };
              } else if (step.kind === 'backlog') {
                expect(got).toEqual([backlog(model, step.run), model.unit]);
              } else {
                expect(got).toEqual([]);
                model = landed(model, step.run);
              }
              const stored = await redis.hgetall(shareKey);
              const fields = (prefix: string) =>
                Object.fromEntries(
                  Object.entries(stored)
                    .filter(([k]) => k.startsWith(prefix))
                    .map(([k, v]) => [k.slice(2), Number(v)]),
                );
              expect({
                v: Number(stored.v),
                unit: Number(stored.u),
                runs: fields('r:'),
                landing: fields('w:'),
              }).toEqual({
                v: model.v,
                unit: model.unit,
                runs: model.runs,
                landing: model.landing,
              });
              break;
            }
          }
        }
        await redis.del(...keys);
      }),
      { numRuns: 60 },
    );
  });
});

// ---- a real write queue ----------------------------------------------------------

interface Chunk {
  runId: string;
  lines: number[];
}

const SIZE = 50;

function chunksOf(runId: string, count: number) {
  return Array.from({ length: count }, (_, k) => ({
    name: 'chunk',
    data: { runId, lines: Array.from({ length: SIZE }, (_, i) => k * SIZE + i) },
    opts: { jobId: `${runId}-${k}` },
  }));
}

/**
 * A write queue holding a backfill's chunks, served by two workers; when
 * the workers have started `joinAfter` of them, the `joiners` enqueue theirs
 * (the processor that reaches that count holds its slot until they have).
 * Returns the order in which chunks started, and how many had started
 * once the joiners' chunks were all in the queue.
 */
async function serve(
  name: string,
  backfill: number,
  joinAfter: number,
  joiners: { runId: string; chunks: number; weight: number }[],
): Promise<{ order: string[]; joined: number }> {
  const p = `${prefix}-${name}`;
  const producer = createRedis('worker', url);
  const queue = createWriteQueue<Chunk>({ connection: producer, prefix: p });
  const started: string[] = [];
  let joined = 0;
  const workers: Worker[] = [];
  const connections = [producer];
  const total = backfill + joiners.reduce((s, j) => s + j.chunks, 0);
  try {
    const A = { runId: 'run-backfill', weight: 1, chunkSize: SIZE };
    const jobs = chunksOf(A.runId, backfill);
    // A page at a time, as a run enqueues.
    for (let i = 0; i < jobs.length; i += 10) await addInTurn(queue, A, jobs.slice(i, i + 10));
    // The backlog each run reads before enqueueing more: every chunk it added is waiting.
    expect(await writesWaiting(queue, A)).toBe(backfill * SIZE);
    let done!: () => void;
    const finished = new Promise<void>((r) => (done = r));
    for (let w = 0; w < 2; w++) {
      const connection = createRedis('worker', url);
      connections.push(connection);
      const worker = new Worker(
        QueueName.writes,
        async (job: Job<Chunk>) => {
          started.push(job.data.runId);
          if (started.length === joinAfter) {
            for (const j of joiners) {
              await addInTurn(queue, { ...j, chunkSize: SIZE }, chunksOf(j.runId, j.chunks));
            }
            joined = started.length;
          }
          if (started.length === total) done();
        },
        workerOptions(QueueName.writes, { connection, prefix: p, concurrency: 1 }),
      );
      workers.push(worker);
    }
    await finished;
    // Once the queue has drained, every run starts level again: nothing is left of theirs.
    expect(await writesWaiting(queue, A)).toBe(0);
    return { order: started, joined };
  } finally {
    for (const w of workers) await w.close();
    await queue.obliterate({ force: true });
    await redis.del(fairShareKey(p));
    await queue.close();
    for (const c of connections) await closeRedis(c);
  }
}

/** Each run's share of the chunks started while every run given still had chunks to start. */
function sharesWhileAll(order: string[], from: number, runs: string[]): Record<string, number> {
  const last = Math.min(...runs.map((r) => order.lastIndexOf(r)));
  const window = order.slice(from, last + 1);
  return Object.fromEntries(
    runs.map((r) => [r, window.filter((x) => x === r).length / window.length]),
  );
}

function expectShares(got: Record<string, number>, want: Record<string, number>): void {
  for (const [run, share] of Object.entries(want)) {
    expect(Math.abs(got[run]! - share), `${run}: ${got[run]} against ${share}`).toBeLessThanOrEqual(
      0.1 * share,
    );
  }
}

describe('a write queue shared by runs', () => {
  it('puts a run that starts while another’s chunks are on their way to an empty queue beside them', async () => {
    const p = `${prefix}-landing`;
    const producer = createRedis('worker', url);
    const queue = createWriteQueue<Chunk>({ connection: producer, prefix: p });
    const A = { runId: 'run-backfill', weight: 1, chunkSize: SIZE };
    const B = { runId: 'run-small', weight: 1, chunkSize: SIZE };
    try {
      // A has tagged its ten chunks and is adding them when B tags its two.
      const add = queue.addBulk.bind(queue);
      let bAdded: Promise<void> | undefined;
      queue.addBulk = async (jobs) => {
        if (jobs[0]!.data.runId === A.runId && !bAdded) {
          bAdded = addInTurn(queue, B, chunksOf(B.runId, 2));
          await bAdded;
        }
        return add(jobs);
      };
      await addInTurn(queue, A, chunksOf(A.runId, 10));
      // BullMQ's order of service: B's chunks in the first two rounds (added first, each goes
      // first in its round), not after A's ten.
      const order = (await queue.getPrioritized(0, -1)).map((j) => [j.data.runId, j.opts.priority]);
      expect(order.slice(0, 4)).toEqual([
        [B.runId, 1],
        [A.runId, 1],
        [B.runId, 2],
        [A.runId, 2],
      ]);
      expect(order).toHaveLength(12);
      // Both said their chunks landed: nothing is on its way any more.
      const fields = Object.keys(await producer.hgetall(fairShareKey(p)));
      expect(fields.filter((f) => f.startsWith('w:'))).toEqual([]);
    } finally {
      await queue.obliterate({ force: true });
      await redis.del(fairShareKey(p));
      await queue.close();
      await closeRedis(producer);
    }
  });

  it('serves a run started during a backfill half the chunks, and finishes it first', async () => {
    const { order, joined } = await serve('two', 120, 10, [
      { runId: 'run-small', chunks: 30, weight: 1 },
    ]);
    expect(order).toHaveLength(150);
    // Without the share the small run's chunks would start after every one of the backfill's.
    expectShares(sharesWhileAll(order, joined, ['run-backfill', 'run-small']), {
      'run-backfill': 0.5,
      'run-small': 0.5,
    });
    expect(order.lastIndexOf('run-small')).toBeLessThan(order.lastIndexOf('run-backfill'));
    // Its first chunk starts within a round: at most the backfill's chunk of that round before
    // it, and one the other worker was taking.
    expect(order.indexOf('run-small') - joined).toBeLessThanOrEqual(2);
  });

  it('shares by weight between three runs of different sizes, the smallest finishing first', async () => {
    const { order, joined } = await serve('three', 200, 10, [
      { runId: 'run-medium', chunks: 120, weight: 2 },
      { runId: 'run-small', chunks: 30, weight: 1 },
    ]);
    expect(order).toHaveLength(350);
    expectShares(sharesWhileAll(order, joined, ['run-backfill', 'run-medium', 'run-small']), {
      'run-backfill': 0.25,
      'run-medium': 0.5,
      'run-small': 0.25,
    });
    // Once the small run is done, the other two share 1:2.
    const afterSmall = order.lastIndexOf('run-small') + 1;
    expectShares(sharesWhileAll(order, afterSmall, ['run-backfill', 'run-medium']), {
      'run-backfill': 1 / 3,
      'run-medium': 2 / 3,
    });
    const end = (r: string) => order.lastIndexOf(r);
    expect(end('run-small')).toBeLessThan(end('run-medium'));
    expect(end('run-medium')).toBeLessThan(end('run-backfill'));
  });
});
