/**
 * Child process of the plan-scale benchmark: one planning pass (`planExport`)
 * over an export whose records are all in state already, with a sink that
 * keeps its results in Redis as a real run's planning does (identity claims,
 * planned writes, failures, seen ids), then prints its counts, wall and CPU
 * time and peak RSS as one JSON line, with the V8 heap (committed) at the
 * highest RSS sampled: what of the peak is the heap.
 * Usage: node --import tsx bench/lib/plan-child.ts PATH REDIS_URL PREFIX [BATCH]
 * BATCH is the rows per batch (default: the planner's own).
 */
import { Redis } from 'ioredis';
import { redisPlanningSink } from '../../src/engine/run-planning-sink.js';
import { StateStore } from '../../src/state/store.js';
import { benchDuplicates, PLAN_RUN_ID, planGeneratedCompanies } from './plan-pass.js';

const [path, redisUrl, prefix, batch] = process.argv.slice(2);
if (path === undefined || redisUrl === undefined || prefix === undefined)
  throw new Error('usage: plan-child.ts PATH REDIS_URL PREFIX [BATCH]');

const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
const store = new StateStore(redis, { prefix });
const runId = PLAN_RUN_ID;

// The sink a real run plans with (adoptions cannot occur here: every record is in state).
const sink = redisPlanningSink(store, runId, 'companies', 'bench', {
  duplicates: benchDuplicates(),
});

// RSS every 50 ms, and the committed V8 heap whenever the RSS is the highest seen.
let peakRss = 0;
let heapAtPeak = 0;
const sample = (): void => {
  const rss = process.memoryUsage.rss();
  if (rss <= peakRss) return;
  peakRss = rss;
  heapAtPeak = process.memoryUsage().heapTotal;
};
const sampler = setInterval(sample, 50);

const c0 = process.cpuUsage();
const t0 = performance.now();
const counts = await planGeneratedCompanies(
  path,
  sink,
  batch === undefined ? undefined : Number(batch),
);
const wallMs = performance.now() - t0;
const cpu = process.cpuUsage(c0);
clearInterval(sampler);
// A pass shorter than one interval still has a reading.
sample();
redis.disconnect();
// maxRSS is in kilobytes on Linux.
console.log(
  JSON.stringify({
    counts,
    wallMs,
    cpuMs: (cpu.user + cpu.system) / 1000,
    maxRssKb: process.resourceUsage().maxRSS,
    heapAtPeakKb: heapAtPeak / 1024,
  }),
);
