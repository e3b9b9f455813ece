/**
 * The run's source and the start time of an incremental pull: which earlier
 * run `{{since}}` reaches back to (the newest completed run of the job, on
 * its own source and mode, that left no row to try again), and when there is
 * none (no `{{since}}`, `--full`, no such run).
 */
import { describe, expect, it } from 'vitest';
import { pullSince, sourceLabel, sourceOf } from '../../src/engine/run-source.js';
import type { JobDefinition } from '../../src/jobs/definition.js';
import { stripCredentials } from '../../src/state/redaction.js';
import { RUN_COUNTERS, type RunCounts, type RunRecord } from '../../src/state/runs.js';

const URL_SINCE =
  'https://acme.my.salesforce.com/services/data/v60.0/query?q=SELECT+Id+FROM+Account+WHERE+LastModifiedDate>{{since}}';

const def = {
  name: 'accounts',
  mode: 'upsert',
  source: { url: URL_SINCE, paginate: 'salesforce' },
} as unknown as JobDefinition;

const req = { full: false } as const;
// As the store keeps it (run records hold sources scrubbed).
const label = stripCredentials(sourceLabel(def, {}));

function run(
  n: number,
  patch: Partial<Omit<RunRecord, 'counts'>> & { counts?: Partial<RunCounts> } = {},
): RunRecord {
  const counts = Object.fromEntries(RUN_COUNTERS.map((c) => [c, 0])) as RunCounts;
  return {
    id: `run-${n}`,
    job: 'accounts',
    entity: 'companies',
    mode: 'upsert',
    source: label,
    options: {},
    status: 'completed',
    createdAt: n * 1000,
    startedAt: n * 1000 + 10,
    timings: {},
    ...patch,
    counts: { ...counts, ...patch.counts },
  };
}

describe('sourceOf', () => {
  it('puts the start time into the URL, 1970 when there is none; keeps the job settings for --source', () => {
    expect(sourceOf(def, {}, new Date('2024-05-01T10:20:30.999Z')).url).toBe(
      URL_SINCE.replace('{{since}}', '2024-05-01T10%3A20%3A30Z'),
    );
    expect(sourceOf(def, {}).url).toBe(URL_SINCE.replace('{{since}}', '1970-01-01T00%3A00%3A00Z'));
    expect(
      sourceOf(def, { source: 'https://other.example/q?since={{since}}' }, new Date(0)),
    ).toEqual({
      url: 'https://other.example/q?since=1970-01-01T00%3A00%3A00Z',
      paginate: 'salesforce',
    });
    expect(sourceOf(def, { source: './accounts.json' })).toEqual({
      path: './accounts.json',
      paginate: 'salesforce',
    });
  });
});

describe('pullSince', () => {
  it('is the start of the newest completed run of the job', () => {
    const runs = [run(5, { status: 'planning' }), run(4), run(3)];
    expect(pullSince(def, req, runs)).toEqual(new Date(4010));
    // A run record without startedAt counts from its creation.
    expect(pullSince(def, req, [run(4, { startedAt: undefined })])).toEqual(new Date(4000));
  });

  it('skips runs that left rows to try again: failed, rejected or in conflict', () => {
    expect(pullSince(def, req, [run(6, { counts: { failed: 1 } }), run(5)])).toEqual(
      new Date(5010),
    );
    expect(pullSince(def, req, [run(6, { counts: { rejected: 2 } }), run(5)])).toEqual(
      new Date(5010),
    );
    expect(pullSince(def, req, [run(6, { counts: { conflict: 2 } }), run(5)])).toEqual(
      new Date(5010),
    );
    // Invalid rows are read again when their CRM record is fixed (it changes).
    expect(pullSince(def, req, [run(6, { counts: { invalid: 3 } })])).toEqual(new Date(6010));
  });

  it('skips runs that ended otherwise, read another source, or ran in another mode', () => {
    const others = [
      run(9, { status: 'failed' }),
      run(8, { status: 'stopped' }),
      run(7, { source: 'https://other.example/export.json' }),
      run(6, { mode: 'create-only' }),
      run(5, { job: 'other-job' }),
    ];
    expect(pullSince(def, req, [...others, run(4)])).toEqual(new Date(4010));
    expect(pullSince(def, req, others)).toBeUndefined();
  });

  it('is none on --full, on a job without {{since}}, and on a first run', () => {
    expect(pullSince(def, { full: true }, [run(4)])).toBeUndefined();
    const plain = { ...def, source: { url: 'https://a.example/list' } } as JobDefinition;
    const plainRun = run(4, { source: stripCredentials(sourceLabel(plain, {})) });
    expect(pullSince(plain, req, [plainRun])).toBeUndefined();
    expect(pullSince(def, req, [])).toBeUndefined();
  });

  it('follows a --source override: its own URL and runs', () => {
    const source = 'https://acme.my.salesforce.com/services/data/v61.0/query?q=x>{{since}}';
    const own = stripCredentials(sourceLabel(def, { source }));
    expect(pullSince(def, { full: false, source }, [run(5), run(4, { source: own })])).toEqual(
      new Date(4010),
    );
    expect(
      pullSince(def, { full: false, source: '/data/accounts.json' }, [run(4)]),
    ).toBeUndefined();
  });
});
