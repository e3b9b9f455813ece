/**
 * The OpenAPI document of the ops API, pure: every route and status the
 * routes answer is in it, and the schemas it carries (read back as the
 * integration tests read them) refuse answers that drift from the shapes:
 * an unknown field, an unknown status or kind, a date that is not ISO.
 */
import { describe, expect, it } from 'vitest';
import { RUN_COUNTERS } from '../../src/state/runs.js';
import { z } from 'zod';
import { openApiDocument } from '../../src/ops/openapi.js';

type Doc = {
  openapi: string;
  paths: Record<
    string,
    Record<
      string,
      {
        parameters?: { name: string; in: string; required: boolean }[];
        requestBody?: { content: Record<string, { schema: unknown }> };
        responses: Record<string, { content?: Record<string, { schema: unknown }> }>;
      }
    >
  >;
};

const doc = openApiDocument('1.2.3') as unknown as Doc;
const schemaOf = (path: string, method: string, status: number) =>
  z.fromJSONSchema(
    doc.paths[path]![method]!.responses[String(status)]!.content!['application/json']!
      .schema as Parameters<typeof z.fromJSONSchema>[0],
  );

// Every counter a run record has: a counter added there must reach the API's shape too.
const counts = Object.fromEntries(RUN_COUNTERS.map((k) => [k, 0]));
const run = {
  runId: 'r1',
  job: 'accounts',
  status: 'completed',
  source: 'accounts.csv',
  mode: 'upsert',
  counts,
  createdAt: '2026-01-02T03:04:05.000Z',
  timings: { planning: 12 },
};

describe('ops API OpenAPI document', () => {
  it('is OpenAPI 3.1 with every route, its path parameters and the JSON body of POST /api/runs', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths['/api/runs']!).sort()).toEqual(['get', 'post']);
    expect(doc.paths['/api/runs/{runId}/retry']!.post!.parameters).toMatchObject([
      { name: 'runId', in: 'path', required: true },
    ]);
    const body = z.fromJSONSchema(
      doc.paths['/api/runs']!.post!.requestBody!.content['application/json']!.schema as never,
    );
    expect(body.safeParse({ job: 'accounts', full: true, mode: 'create-only' }).success).toBe(true);
    expect(body.safeParse({ job: 'accounts', source: '/etc/passwd' }).success).toBe(false);
    expect(
      Object.keys(doc.paths['/api/runs/{runId}/failures']!.get!.responses['200']!.content!),
    ).toEqual(['application/json', 'text/csv']);
  });

  it('refuses answers that drift from the shapes', () => {
    const detail = schemaOf('/api/runs/{runId}', 'get', 200);
    expect(detail.safeParse(run).success).toBe(true);
    expect(detail.safeParse({ ...run, learnedRate: 3 }).success).toBe(false);
    expect(detail.safeParse({ ...run, status: 'done' }).success).toBe(false);
    expect(detail.safeParse({ ...run, createdAt: 'yesterday' }).success).toBe(false);
    expect(detail.safeParse({ ...run, counts: { ...counts, read: -1 } }).success).toBe(false);

    const failures = schemaOf('/api/runs/{runId}/failures', 'get', 200);
    const row = { line: 3, kind: 'warning', field: 'website', reason: 'not a URL', value: '@x' };
    expect(failures.safeParse({ runId: 'r1', rows: [row], limit: 100, offset: 0 }).success).toBe(
      true,
    );
    expect(
      failures.safeParse({ runId: 'r1', rows: [{ ...row, kind: 'oops' }], limit: 1, offset: 0 })
        .success,
    ).toBe(false);

    const jobs = schemaOf('/api/jobs', 'get', 200);
    const job = {
      name: 'accounts',
      schedule: null,
      timezone: null,
      nextSlot: null,
      paused: null,
      description: null,
      entity: 'companies',
      mode: 'upsert',
      mapping: 'inline',
      priority: 7,
      lastRun: null,
    };
    expect(jobs.safeParse({ jobs: [job], problems: [] }).success).toBe(true);
    const { priority: _, ...unweighted } = job;
    for (const bad of [
      unweighted,
      { ...job, priority: 0 },
      { ...job, priority: 101 },
      { ...job, priority: 1.5 },
    ]) {
      expect(jobs.safeParse({ jobs: [bad], problems: [] }).success).toBe(false);
    }

    const error = schemaOf('/api/runs', 'post', 404);
    expect(error.safeParse({ error: 'no job "nope"' }).success).toBe(true);
    expect(error.safeParse({ detail: 'no job' }).success).toBe(false);
  });
});
