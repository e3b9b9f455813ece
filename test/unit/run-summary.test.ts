import { describe, expect, it } from 'vitest';
import { RunWaitTimeoutError, runSummary, waitForRun } from '../../src/engine/run-summary.js';
import { RUN_COUNTERS, type RunCounts, type RunRecord } from '../../src/state/runs.js';

const counts = (over: Partial<RunCounts> = {}): RunCounts => ({
  ...(Object.fromEntries(RUN_COUNTERS.map((c) => [c, 0])) as RunCounts),
  ...over,
});

const record = (over: Partial<RunRecord> = {}): RunRecord => ({
  id: 'run-20260302T020000Z-abcdef',
  job: 'companies',
  entity: 'companies',
  mode: 'upsert',
  source: '/data/companies.csv',
  options: { full: false, force: false, trigger: 'cli' },
  status: 'completed',
  phase: 'done',
  createdAt: Date.parse('2026-03-02T02:00:00Z'),
  startedAt: Date.parse('2026-03-02T02:00:01Z'),
  finishedAt: Date.parse('2026-03-02T02:00:04.5Z'),
  counts: counts({ read: 5, created: 3, invalid: 1, rejected: 1, writesPlanned: 4 }),
  timings: { planning: 10 },
  ...over,
});

describe('runSummary', () => {
  it('is the show --json text, key for key in its order', () => {
    // Scripts parse this line (docs/CLI.md): a key moved or renamed breaks them.
    expect(JSON.stringify(runSummary(record()))).toBe(
      '{"runId":"run-20260302T020000Z-abcdef","job":"companies","status":"completed","phase":"done",' +
        '"source":"/data/companies.csv","mode":"upsert","counts":{"read":5,"created":3,"updated":0,' +
        '"unchanged":0,"adopted":0,"invalid":1,"conflict":0,"duplicates":0,"rejected":1,"failed":0,"skipped":0,' +
        '"unsupported":0,"warnings":0,"orphans":0,"writesPlanned":4,"writesSettled":0,"rateLimited":0},' +
        '"createdAt":"2026-03-02T02:00:00.000Z","startedAt":"2026-03-02T02:00:01.000Z",' +
        '"finishedAt":"2026-03-02T02:00:04.500Z","durationMs":3500}',
    );
  });

  it('leaves out what a queued run does not have yet; an error comes after the phase', () => {
    const queued = runSummary(
      record({
        status: 'queued',
        phase: undefined,
        startedAt: undefined,
        finishedAt: undefined,
      }),
    );
    expect(Object.keys(queued)).toEqual([
      'runId',
      'job',
      'status',
      'source',
      'mode',
      'counts',
      'createdAt',
    ]);
    const failed = runSummary(record({ status: 'failed', error: 'platform said 401' }));
    expect(Object.keys(failed).slice(0, 5)).toEqual(['runId', 'job', 'status', 'phase', 'error']);
  });
});

describe('waitForRun', () => {
  /** A store whose run goes through the given statuses, one per read, then stays at the last. */
  const storeOf = (statuses: RunRecord['status'][]) => {
    let reads = 0;
    return {
      get reads() {
        return reads;
      },
      runs: {
        get: async (id: string) =>
          id === 'nope'
            ? null
            : record({ status: statuses[Math.min(reads++, statuses.length - 1)]! }),
      },
    };
  };

  it('returns the record once the run has ended, telling each read before', async () => {
    const store = storeOf(['queued', 'planning', 'writing', 'completed']);
    const seen: string[] = [];
    const run = await waitForRun(store, 'run-1', {
      pollMs: 1,
      onPoll: (r) => void seen.push(r.status),
    });
    expect(run?.status).toBe('completed');
    expect(seen).toEqual(['queued', 'planning', 'writing']);
  });

  it('is null for a run that does not exist, and gives up past its timeout', async () => {
    expect(await waitForRun(storeOf(['completed']), 'nope')).toBeNull();
    const going = waitForRun(storeOf(['writing']), 'run-1', { pollMs: 1, timeoutMs: 5 });
    await expect(going).rejects.toBeInstanceOf(RunWaitTimeoutError);
    await expect(going).rejects.toThrow(/run run-1 still writing/);
  });
});
