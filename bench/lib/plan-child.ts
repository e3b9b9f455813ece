/**
 * Child process of the plan-scale benchmark: one planning pass (`planExport`)
 * over an export whose records are all in state already, with a sink that
 * keeps its results in Redis as a real run's planning does (identity claims,
 * planned writes, failures, seen ids), then prints its counts, wall and CPU
 * time and peak RSS as one JSON line.
 * Usage: node --import tsx bench/lib/plan-child.ts PATH REDIS_URL PREFIX
 */
import { Redis } from 'ioredis';
import { loadMapping } from '../../src/crm/presets.js';
import { planExport, type PlanningSink } from '../../src/engine/planning.js';
import { silentLogger } from '../../src/log.js';
import type { FailureRow } from '../../src/state/runs.js';
import { StateStore } from '../../src/state/store.js';
import { isWrite, type WriteAction } from '../../src/sync/action.js';

const [path, redisUrl, prefix] = process.argv.slice(2);
if (path === undefined || redisUrl === undefined || prefix === undefined)
  throw new Error('usage: plan-child.ts PATH REDIS_URL PREFIX');

const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
const store = new StateStore(redis, { prefix });
const runId = 'bench-plan-run';

/** What src/engine/run.ts's sink does with each batch (adoptions cannot occur here). */
const sink: PlanningSink = {
  claim: (entries) => store.claimIdentities(runId, entries),
  lookup: (records) => store.lookup('companies', records),
  async accept(actions) {
    const writes: WriteAction[] = [];
    const failures: FailureRow[] = [];
    const seen: number[] = [];
    for (const a of actions) {
      if (isWrite(a)) writes.push(a);
      if ('platformId' in a && a.platformId !== undefined) seen.push(a.platformId);
      if (a.kind === 'invalid' || a.kind === 'conflict')
        failures.push({ line: a.line, kind: a.kind, reason: a.reason });
    }
    await Promise.all([
      store.savePlannedWrites(runId, writes),
      store.addFailures(runId, failures),
      store.markSeen(runId, seen),
    ]);
  },
  async withdraw(rows) {
    await store.dropPlannedWrites(
      runId,
      rows.filter((r) => r.was === 'create' || r.was === 'update').map((r) => r.conflict.line),
    );
    await store.addFailures(
      runId,
      rows.map((r) => ({
        line: r.conflict.line,
        kind: 'conflict' as const,
        reason: r.conflict.reason,
      })),
    );
  },
};

const c0 = process.cpuUsage();
const t0 = performance.now();
const counts = await planExport({
  entity: 'companies',
  mapping: loadMapping('hubspot-companies'),
  source: { path },
  mode: 'upsert',
  memberUpdates: false,
  sink,
  logger: silentLogger,
});
const wallMs = performance.now() - t0;
const cpu = process.cpuUsage(c0);
redis.disconnect();
// maxRSS is in kilobytes on Linux.
console.log(
  JSON.stringify({
    counts,
    wallMs,
    cpuMs: (cpu.user + cpu.system) / 1000,
    maxRssKb: process.resourceUsage().maxRSS,
  }),
);
