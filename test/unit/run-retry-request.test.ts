import { describe, expect, it } from 'vitest';
import { retryRequest, RetrySourceError } from '../../src/engine/run-service.js';
import type { JobDefinition } from '../../src/jobs/definition.js';
import type { RunRecord } from '../../src/state/runs.js';

// Only the fields retryRequest reads.
const def = (source: JobDefinition['source'], mode: JobDefinition['mode'] = 'upsert') =>
  ({ name: 'acme', source, mode }) as JobDefinition;

const run = (over: Partial<RunRecord>): RunRecord =>
  ({
    id: 'run-1',
    job: 'acme',
    entity: 'companies',
    mode: 'upsert',
    source: '/data/acme.csv',
    options: { full: false, force: false, trigger: 'cli' },
    status: 'completed',
    createdAt: 0,
    counts: {},
    timings: {},
    ...over,
  }) as RunRecord;

describe('retryRequest', () => {
  it("re-runs the job's own source with the original options", () => {
    expect(
      retryRequest(run({ options: { full: true, force: true } }), def({ path: '/data/acme.csv' })),
    ).toEqual({ job: 'acme', full: true, force: true, trigger: 'retry', retryOf: 'run-1' });
  });

  it('keeps a --source override and a mode override of the original run', () => {
    expect(
      retryRequest(
        run({ source: '/tmp/backfill.csv', mode: 'create-only' }),
        def({ path: '/data/acme.csv' }),
      ),
    ).toMatchObject({ source: '/tmp/backfill.csv', mode: 'create-only', retryOf: 'run-1' });
  });

  it("treats the job's URL, shown without its query, as no override", () => {
    const url = 'https://exports.example/acme.csv?token=${ACME_TOKEN}';
    const shown = 'https://exports.example/acme.csv?%E2%80%A6';
    expect(retryRequest(run({ source: shown }), def({ url })).source).toBeUndefined();
  });

  it('asks for --source when the override lost its query, and takes one given', () => {
    const r = run({ source: 'https://other.example/x.csv?%E2%80%A6' });
    const d = def({ path: '/data/acme.csv' });
    expect(() => retryRequest(r, d)).toThrow(RetrySourceError);
    expect(retryRequest(r, d, 'https://other.example/x.csv?sig=abc').source).toBe(
      'https://other.example/x.csv?sig=abc',
    );
  });
});
