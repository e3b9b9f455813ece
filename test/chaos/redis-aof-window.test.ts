/**
 * Chaos: what `appendfsync everysec` can lose, replayed. A 12-row sync runs
 * on a redis-server of this test's own (AOF on, fsync every second); then
 * Redis is stopped and its AOF cut just before the pending claim of a create
 * in the middle of the run, as a crash would lose the last second of
 * acknowledged writes. Started again from that file, Redis has forgotten the
 * claims, commits and settlements of the creates from there on, although the
 * platform holds their records: the resumed run sends them again, and the
 * platform ends with two records for each. The run cannot see it (its state
 * says every row was created once, and a second run writes nothing);
 * `crm-sync audit companies` does: each such record shares its external_id,
 * and the first copy is reported as lost by our state. The audit writes
 * nothing.
 */
import { describe, expect, it } from 'vitest';
import { incrementalAof, readAof, truncateAof } from '../harness/aof.js';
import { cliEnv, requireBuild, runCli } from '../harness/cli.js';
import {
  API_KEY,
  companyRows,
  countWrites,
  HUBSPOT_HEADER,
  hubspotCells,
  hubspotJob,
  startEngine,
  statsSince,
  type EngineHarness,
} from '../harness/engine.js';
import { removeDir, startRedisServer } from '../harness/redis-server.js';
import type { AuditReport } from '../../src/sync/audit.js';

const ROWS = 12;

/** Waits until a connection that lost its Redis is back (the producer fails fast meanwhile). */
async function reconnected(redis: {
  status: string;
  once(event: 'ready', listener: () => void): unknown;
}): Promise<void> {
  if (redis.status !== 'ready') await new Promise<void>((resolve) => redis.once('ready', resolve));
}

/**
 * Where the AOF is cut, at the create of the middle row: just before its
 * pending claim (Redis forgets the claim: the create goes out again), or just
 * after it (Redis keeps the claim but forgets the commit: the create is
 * verified by listing and adopted, not sent again).
 */
const CUTS = [
  { cut: 'before', forgottenRows: ROWS / 2 },
  { cut: 'after', forgottenRows: ROWS / 2 - 1 },
] as const;

describe('chaos: Redis restarted from an AOF that lost the tail of a run', () => {
  it.each(CUTS)(
    'cut $cut the middle claim: the creates whose claims Redis forgot are sent twice, and crm-sync audit reports them',
    async ({ cut, forgottenRows }) => {
      requireBuild();
      const server = await startRedisServer({ appendonly: true, appendfsync: 'everysec' });
      let h: EngineHarness | undefined;
      let down = false;
      try {
        // One write at a time: the AOF then orders claim, create, commit of each row in turn.
        h = await startEngine({
          // A short lock: the resumed run's chunks, active in the restored queue, stall sooner.
          env: { REDIS_URL: server.url, WRITE_CONCURRENCY: '1', WORKER_LOCK_MS: '2500' },
        });
        const rows = companyRows(ROWS);
        const path = h.writeCsv('companies.csv', HUBSPOT_HEADER, rows.map(hubspotCells));
        h.writeJob('hubspot-companies', hubspotJob(path));
        const run = await h.runJob('hubspot-companies');
        expect(run.status).toBe('completed');
        expect(run.counts.created).toBe(ROWS);
        await h.stopWorkers();
        // The producer's queue reports the outage it lives through; expected here.
        h.producer.runQueue.on('error', () => {});
        // SIGTERM: Redis writes and fsyncs its whole AOF on the way out; the cut below is the crash.
        await server.stop();
        down = true;

        const file = incrementalAof(server.dir);
        const commands = readAof(file);
        const pendingHash = `${h.prefix}:companies:pending`;
        // Each create's claim marks its identity keys pending; its external_id key names the row.
        const claims = commands.flatMap((c) =>
          c.args[0]!.toUpperCase() === 'HSET' && c.args[1] === pendingHash
            ? c.args
                .slice(2)
                .flatMap((f, n) => (n % 2 === 0 && f.startsWith('x:') ? [{ c, key: f }] : []))
            : [],
        );
        const claimed = [...new Set(claims.map((x) => x.key))];
        expect(claimed).toHaveLength(ROWS);
        const middle = claims.find((x) => x.key === claimed[ROWS / 2])!.c;
        // After the claim: at the next command that starts outside its transaction.
        const cutAt =
          cut === 'before'
            ? middle.cutAt
            : commands.find((c) => c.offset > middle.offset && c.cutAt === c.offset)!.offset;
        // What the file keeps: the claims before the cut. Every later create is forgotten.
        const kept = new Set(claims.filter((x) => x.c.offset < cutAt).map((x) => x.key));
        const forgotten = claimed.filter((k) => !kept.has(k)).map((k) => k.slice(2));
        expect(forgotten.length).toBe(forgottenRows);
        truncateAof(file, cutAt);
        await server.start();
        down = false;
        await reconnected(h.producer.redis);

        const before = await h.stats();
        await h.startWorkers();
        const resumed = await h.waitForRun(run.id, { timeoutMs: 60_000 });
        expect(resumed.status).toBe('completed');
        // Our state counts each row created once…
        expect(resumed.counts.created).toBe(ROWS);
        expect(resumed.counts.failed + resumed.counts.rejected).toBe(0);
        // …but the creates it forgot went out again: two records for each. A create whose
        // claim was kept (cut after it) was verified by listing and adopted, not sent again.
        expect(countWrites(statsSince(before, await h.stats()))).toBe(forgotten.length);
        const byExternal = new Map<string, number[]>();
        for (const c of (await h.dump()).companies) {
          const x = c.external_id as string;
          byExternal.set(x, [...(byExternal.get(x) ?? []), c.id as number]);
        }
        expect(byExternal.size).toBe(ROWS);
        const doubled = [...byExternal].filter(([, ids]) => ids.length > 1).map(([x]) => x);
        expect(doubled.sort()).toEqual([...forgotten].sort());
        expect([...byExternal.values()].every((ids) => ids.length <= 2)).toBe(true);

        // The sync cannot see it: a second run finds every row unchanged.
        const second = await h.runJob('hubspot-companies');
        expect(second.status).toBe('completed');
        expect(second.counts.unchanged).toBe(ROWS);
        expect(second.counts.created + second.counts.updated).toBe(0);
        await h.stopWorkers();

        // The audit does: every forgotten create shares its external_id (and CRM id), and the
        // copy our state lost is named, with the record our state holds instead. It writes nothing.
        const env = cliEnv({
          REDIS_URL: server.url,
          CRM_SYNC_PREFIX: h.prefix,
          PLATFORM_BASE_URL: h.sandbox.url,
          PLATFORM_API_KEY: API_KEY,
          LOG_LEVEL: 'silent',
        });
        const state = await h.stateSnapshot();
        const audit = await runCli(['audit', 'companies', '--json'], env);
        expect(audit.stderr).toBe('');
        expect(audit.code).toBe(6);
        const report = JSON.parse(audit.stdout) as AuditReport;
        expect(report.listed).toBe(ROWS + forgotten.length);
        expect(report.tracked).toBe(ROWS);
        const sharedExternal = report.shared.filter((s) => s.field === 'external_id');
        expect(sharedExternal.map((s) => s.value).sort()).toEqual([...forgotten].sort());
        expect(report.shared.filter((s) => s.field === 'crm_company_id')).toHaveLength(
          forgotten.length,
        );
        expect(report.shared.every((s) => s.problem)).toBe(true);
        const lost = report.untracked.filter((u) => u.kind === 'lost');
        expect(lost).toHaveLength(forgotten.length);
        for (const s of sharedExternal) {
          // The first copy (the lower id) is the one our state lost; the second is tracked.
          const [first, again] = s.platformIds;
          expect(s.stateId).toBe(again);
          expect(lost).toContainEqual(
            expect.objectContaining({ platformId: first, stateId: again, key: `x:${s.value}` }),
          );
        }
        expect(report.untracked.filter((u) => u.kind !== 'lost')).toEqual([]);
        expect(report.problems).toBe(3 * forgotten.length);
        // Sync state untouched; the audit's requests booked their turns in the shared pacer.
        const sync = (m: Map<string, string>) =>
          new Map([...m].filter(([key]) => !/:pacer(:log)?$/.test(key)));
        expect(sync(await h.stateSnapshot())).toEqual(sync(state));

        const table = await runCli(['audit', 'companies'], env);
        expect(table.code).toBe(6);
        expect(table.stdout).toContain(
          `audit of companies: listed ${ROWS + forgotten.length}, tracked by our state ${ROWS}`,
        );
        expect(table.stdout).toMatch(new RegExp(`external_id\\s+${forgotten[0]}\\s`));
      } finally {
        // Closed while its Redis answers: closing deletes the prefix's keys.
        if (down) await server.start();
        if (h) {
          await reconnected(h.producer.redis);
          await h.close();
        }
        await server.stop();
        removeDir(server.dir);
      }
    },
  );
});
