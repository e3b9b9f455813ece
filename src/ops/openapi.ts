/**
 * The OpenAPI 3.1 document of the ops API, served at /api/openapi.json. Its
 * schemas are generated from the zod shapes the routes use
 * (src/ops/api-schemas.ts), so the document cannot drift from the code; a
 * test checks real responses of every route against it.
 */
import { createRequire } from 'node:module';
import { z } from 'zod';
import * as S from './api-schemas.js';

type Schema = z.ZodType;

interface Operation {
  summary: string;
  parameters?: { name: string; in: 'path' | 'query'; schema: Schema; description?: string }[];
  body?: Schema;
  responses: Record<number, { description: string; json?: Schema; csv?: boolean }>;
}

const runId = { name: 'runId', in: 'path' as const, schema: z.string() };
const jobName = { name: 'name', in: 'path' as const, schema: z.string() };
const unauthorized = { description: 'OPS_TOKEN is set and the bearer token is missing or wrong' };
const bad = (description: string) => ({ description, json: S.ErrorBody });
const refused = bad('Origin or Sec-Fetch-Site shows another site');

/** Each operation by path and method, as OpenAPI writes paths. */
export const OPERATIONS: Record<string, Record<'get' | 'post', Operation | undefined>> = {
  '/api/jobs': {
    get: {
      summary: 'Every job definition with its priority, schedule, next slot, pause and last run',
      responses: { 200: { description: 'The jobs folder', json: S.JobList }, 401: unauthorized },
    },
    post: undefined,
  },
  '/api/jobs/{name}/plan': {
    get: {
      summary: 'The dry-run plan of a job (what a run would do; nothing is written)',
      parameters: [
        { name: 'name', in: 'path', schema: z.string() },
        { name: 'full', in: 'query', schema: z.enum(['true', 'false']) },
        { name: 'mode', in: 'query', schema: z.enum(['upsert', 'create-only', 'update-only']) },
      ],
      responses: {
        200: {
          description: 'The plan, as `crm-sync plan --json` with a sample of actions',
          json: S.Plan,
        },
        400: bad('A bad query parameter'),
        401: unauthorized,
        404: bad('No such job'),
        422: bad('The job file does not load, or its source cannot be read'),
      },
    },
    post: undefined,
  },
  '/api/jobs/{name}/pause': {
    get: undefined,
    post: {
      summary: "Pauses a job's schedule: its slots start no run and are not alerted as missed",
      parameters: [jobName],
      responses: {
        200: { description: 'Paused (a job already paused stays as it was)', json: S.JobSchedule },
        400: bad('A body with fields'),
        401: unauthorized,
        403: refused,
        404: bad('No such job'),
        409: bad('The job has no schedule'),
        415: bad('A body that is not application/json'),
        422: bad('The job file does not load'),
      },
    },
  },
  '/api/jobs/{name}/resume': {
    get: undefined,
    post: {
      summary: "Resumes a job's schedule from its next slot; slots passed while paused are not run",
      parameters: [jobName],
      responses: {
        200: { description: 'Running (a job not paused stays as it was)', json: S.JobSchedule },
        400: bad('A body with fields'),
        401: unauthorized,
        403: refused,
        404: bad('No such job'),
        415: bad('A body that is not application/json'),
        422: bad('The job file does not load'),
      },
    },
  },
  '/api/runs': {
    get: {
      summary: 'The run history, newest first',
      parameters: [
        { name: 'job', in: 'query', schema: z.string() },
        { name: 'status', in: 'query', schema: S.RunsQuery.shape.status.unwrap() },
        { name: 'limit', in: 'query', schema: z.number().int().min(1).max(500) },
        { name: 'offset', in: 'query', schema: z.number().int().min(0) },
      ],
      responses: {
        200: {
          description: 'Runs, each as `crm-sync show RUN --json` with timings',
          json: S.RunList,
        },
        400: bad('A bad query parameter'),
        401: unauthorized,
      },
    },
    post: {
      summary: 'Starts a run of a job, or attaches to the one going',
      body: S.RunRequestBody,
      responses: {
        202: { description: 'Enqueued (or attached)', json: S.StartedRun },
        400: bad('A body that is not JSON, or has unknown or wrong fields'),
        401: unauthorized,
        403: refused,
        404: bad('No such job'),
        409: bad('A run of the job is going with another mode or `full`; the answer names it'),
        413: bad('A body over 16 KiB'),
        415: bad('A body that is not application/json'),
        422: bad('The job file does not load'),
      },
    },
  },
  '/api/runs/{runId}': {
    get: {
      summary: 'One run: `crm-sync show RUN --json` with timings and progress',
      parameters: [runId],
      responses: {
        200: { description: 'The run', json: S.RunDetail },
        401: unauthorized,
        404: bad('No such run'),
      },
    },
    post: undefined,
  },
  '/api/runs/{runId}/failures': {
    get: {
      summary: 'Rows of a run not synced, skipped, or synced with a warning',
      parameters: [
        runId,
        { name: 'kind', in: 'query', schema: S.FailuresQuery.shape.kind.unwrap() },
        { name: 'field', in: 'query', schema: z.string() },
        {
          name: 'limit',
          in: 'query',
          schema: z.number().int().min(1),
          description: 'JSON: default 100, at most 1000. CSV: default every row',
        },
        { name: 'offset', in: 'query', schema: z.number().int().min(0) },
      ],
      responses: {
        200: {
          description: 'JSON, or with `Accept: text/csv` the CSV of `crm-sync failures --csv`',
          json: S.FailureList,
          csv: true,
        },
        400: bad('A bad query parameter'),
        401: unauthorized,
        404: bad('No such run'),
      },
    },
    post: undefined,
  },
  '/api/runs/{runId}/retry': {
    get: undefined,
    post: {
      summary: 'Runs the job of a run again, as `crm-sync retry`',
      parameters: [runId],
      responses: {
        202: { description: 'Enqueued (or attached)', json: S.StartedRetry },
        401: unauthorized,
        403: refused,
        404: bad('No such run'),
        409: bad('The run has not ended'),
        422: bad('The job file does not load, or the source must be given again'),
      },
    },
  },
  '/api/runs/{runId}/cancel': {
    get: undefined,
    post: {
      summary:
        'Cancels a run, as `crm-sync cancel`: nothing more is sent, writes in flight settle, it ends `cancelled`',
      parameters: [runId],
      responses: {
        202: { description: 'The cancel is taken', json: S.CancelledRun },
        400: bad('A body with fields'),
        401: unauthorized,
        403: refused,
        404: bad('No such run'),
        409: bad('The run has ended, or is completing (every write settled and verified)'),
      },
    },
  },
};

/** A zod shape as an OpenAPI 3.1 schema (JSON Schema 2020-12, inline). */
export function jsonSchema(
  schema: Schema,
  io: 'input' | 'output' = 'output',
): Record<string, unknown> {
  const { $schema: _drop, ...rest } = z.toJSONSchema(schema, {
    target: 'draft-2020-12',
    io,
    unrepresentable: 'any',
  }) as Record<string, unknown>;
  return rest;
}

function operation(op: Operation): Record<string, unknown> {
  const responses: Record<string, unknown> = {};
  for (const [status, r] of Object.entries(op.responses)) {
    const content: Record<string, unknown> = {};
    if (r.json) content['application/json'] = { schema: jsonSchema(r.json) };
    if (r.csv) content['text/csv'] = { schema: { type: 'string' } };
    responses[status] = {
      description: r.description,
      ...(Object.keys(content).length > 0 && { content }),
    };
  }
  return {
    summary: op.summary,
    ...(op.parameters && {
      parameters: op.parameters.map((p) => ({
        name: p.name,
        in: p.in,
        required: p.in === 'path',
        schema: jsonSchema(p.schema, 'input'),
        ...(p.description !== undefined && { description: p.description }),
      })),
    }),
    ...(op.body && {
      requestBody: {
        required: true,
        content: { 'application/json': { schema: jsonSchema(op.body, 'input') } },
      },
    }),
    responses,
  };
}

/** The package's version (the same relative path from src/ops/ and dist/ops/). */
function packageVersion(): string {
  try {
    const pkg = createRequire(import.meta.url)('../../package.json') as { version?: unknown };
    return typeof pkg.version === 'string' ? pkg.version : '0.0.0';
  } catch {
    return '0.0.0';
  }
}

/** The document; built once per server. */
export function openApiDocument(version = packageVersion()): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const [path, methods] of Object.entries(OPERATIONS)) {
    paths[path] = {};
    for (const [method, op] of Object.entries(methods)) {
      if (op) paths[path][method] = operation(op);
    }
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'crm-sync ops API',
      version,
      description:
        'Jobs, runs and their failures; starting runs; pausing and resuming schedules. With OPS_TOKEN set, every route needs `Authorization: Bearer <token>`.',
    },
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
    },
    security: [{ bearer: [] }],
    paths,
  };
}
