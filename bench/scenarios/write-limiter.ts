/**
 * The global write limit: job starts per second through the writes queue
 * with two workers sharing one `setGlobalRateLimit`, against the configured
 * rate. Processors sleep to stand in for platform latency. Also shows what
 * too little concurrency does (the limiter cannot reach its rate).
 */
import { Worker } from 'bullmq';
import type { Scenario } from '../run.js';
import { startRedisServer, removeDir } from '../../test/harness/redis-server.js';
import { closeRedis, createRedis } from '../../src/queue/connection.js';
import { applyGlobalRateLimit, writeConcurrency } from '../../src/queue/limiter.js';
import { QueueName, createWriteQueue, workerOptions } from '../../src/queue/queues.js';

const LATENCY_MS = 50;
const SECONDS = 4;
const REPEATS = 3;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function measure(
  url: string,
  rate: number,
  concurrency: number,
  run: number,
): Promise<number> {
  const prefix = `{bench-limiter-${rate}-${concurrency}-${run}}`;
  const producer = createRedis('worker', url);
  const queue = createWriteQueue<{ n: number }>({ connection: producer, prefix });
  await applyGlobalRateLimit(queue, rate);
  // More jobs than the measured period can take, so the queue never runs dry.
  const total = rate * (SECONDS + 2);
  await queue.addBulk(Array.from({ length: total }, (_, n) => ({ name: 'w', data: { n } })));
  const starts: number[] = [];
  const connections = [createRedis('worker', url), createRedis('worker', url)];
  const workers = connections.map(
    (connection) =>
      new Worker(
        QueueName.writes,
        async () => {
          starts.push(performance.now());
          await sleep(LATENCY_MS);
        },
        workerOptions(QueueName.writes, { connection, prefix, concurrency }),
      ),
  );
  while (starts.length === 0) await sleep(10);
  await sleep(SECONDS * 1_000 + 100);
  for (const w of workers) await w.close();
  await queue.obliterate({ force: true });
  await queue.close();
  for (const c of [producer, ...connections]) await closeRedis(c);
  starts.sort((a, b) => a - b);
  // Starts in whole seconds from the first: BullMQ's windows are fixed and
  // start with a burst, so a first-to-last rate would count one burst too many.
  const t0 = starts[0]!;
  return starts.filter((t) => t - t0 < SECONDS * 1_000).length / SECONDS;
}

const scenario: Scenario = {
  name: 'write-limiter',
  description: `job starts/s through the writes queue, 2 workers sharing one global limit, ${LATENCY_MS} ms per job`,
  async run() {
    const server = await startRedisServer();
    const rows: (string | number)[][] = [];
    try {
      const cases = [20, 50, 100].map((rate) => ({
        rate,
        concurrency: writeConcurrency({ rateLimit: rate, latencyMs: LATENCY_MS }),
      }));
      cases.push({ rate: 100, concurrency: 1 });
      for (const c of cases) {
        const rates: number[] = [];
        for (let i = 0; i < REPEATS; i++)
          rates.push(await measure(server.url, c.rate, c.concurrency, i));
        const m = median(rates);
        rows.push([
          c.rate,
          c.concurrency,
          m.toFixed(1),
          (m / c.rate).toFixed(3),
          rates.map((r) => r.toFixed(1)).join(', '),
        ]);
      }
    } finally {
      await server.stop();
      removeDir(server.dir);
    }
    return [
      {
        title: 'Global write limit (median of 3)',
        columns: ['limit (rps)', 'concurrency per worker', 'measured (starts/s)', 'ratio', 'runs'],
        rows,
        notes: [
          'concurrency from writeConcurrency(rate, latency) unless given; the last row shows 2 workers × 1 in flight cannot reach 100 rps at 50 ms (at most 40/s)',
          `measured: starts within the first ${SECONDS} s from the first start, divided by ${SECONDS}, with the queue never empty`,
        ],
      },
    ];
  },
};

export default scenario;
