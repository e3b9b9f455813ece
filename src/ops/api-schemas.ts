/**
 * The shapes of the ops API's requests and responses, written once: the
 * OpenAPI document (src/ops/openapi.ts) is generated from them, and the
 * request bodies and query strings are parsed with them.
 */
import { z } from 'zod';
import { FAILURE_KINDS } from '../state/failure-kinds.js';
import { FailureRowSchema, RUN_COUNTERS, RUN_STATUSES, type RunCounter } from '../state/runs.js';
import { MAX_WEIGHT } from '../queue/fair-share.js';

export const ErrorBody = z.strictObject({ error: z.string() }).meta({
  description: 'What was wrong, in one line',
});

const count = z.number().int().min(0);

/** Every counter of a run record, so that one added there is in the API's shape too. */
const RunCounts = z.strictObject(
  Object.fromEntries(RUN_COUNTERS.map((c) => [c, count])) as Record<RunCounter, typeof count>,
);

export const RunSummary = z.strictObject({
  runId: z.string(),
  job: z.string(),
  status: z.enum(RUN_STATUSES),
  phase: z.string().optional(),
  error: z.string().optional(),
  alertUndelivered: z.string().optional().meta({
    description: "Why the alert of the run's end was given up after its last delivery attempt",
  }),
  source: z.string(),
  mode: z.string(),
  counts: RunCounts,
  createdAt: z.iso.datetime(),
  startedAt: z.iso.datetime().optional(),
  finishedAt: z.iso.datetime().optional(),
  durationMs: z.number().int().optional(),
});

export const RunDetail = RunSummary.extend({
  timings: z.record(z.string(), z.number()).meta({ description: 'Milliseconds per phase' }),
  progress: z
    .strictObject({
      writesPlanned: count,
      writesSettled: count,
      created: count,
      updated: count,
      rejected: count,
      failed: count,
    })
    .optional()
    .meta({ description: 'Present while the run has not ended' }),
});

export const RunList = z.strictObject({
  runs: z.array(RunDetail),
  limit: z.number().int(),
  offset: z.number().int(),
});

export const JobSchedule = z.strictObject({
  name: z.string(),
  schedule: z.string().nullable(),
  timezone: z.string().nullable(),
  nextSlot: z.iso.datetime().nullable().meta({
    description: 'The next slot of the schedule (a paused job starts no run at it)',
  }),
  paused: z
    .strictObject({
      by: z.string().meta({ description: 'Who paused it: `ops-api`, or `cli:` and the OS user' }),
      since: z.iso.datetime(),
    })
    .nullable()
    .meta({ description: 'Who paused the schedule and since when; null when it runs' }),
});

export const JobOverview = JobSchedule.extend({
  description: z.string().nullable(),
  entity: z.string(),
  mode: z.string(),
  mapping: z.string(),
  priority: z.number().int().min(1).max(MAX_WEIGHT).meta({
    description:
      "The weight of the job's runs in the write queue's round robin: a run gets this many chunks a round (1 when the job file sets none)",
  }),
  lastRun: RunSummary.nullable(),
});

export const JobList = z.strictObject({
  jobs: z.array(JobOverview),
  problems: z.array(z.string()).meta({ description: 'Files of the jobs folder that do not load' }),
});

// A plan's counts: the outcomes a plan can know before writing (planOutcomes).
const PlanCounts = RunCounts.pick({
  read: true,
  created: true,
  updated: true,
  unchanged: true,
  adopted: true,
  invalid: true,
  conflict: true,
  duplicates: true,
  failed: true,
  skipped: true,
  unsupported: true,
  warnings: true,
});

export const Plan = z.strictObject({
  runId: z.null(),
  job: z.string(),
  status: z.literal('dry-run'),
  actions: z
    .array(z.looseObject({ line: z.number().int(), kind: z.string() }))
    .meta({ description: 'The first 100 actions of each kind but unchanged, with field diffs' }),
  counts: PlanCounts,
  warnings: z
    .array(z.looseObject({ line: z.number().int(), field: z.string(), reason: z.string() }))
    .meta({ description: 'The first 100 optional fields that would be left out' }),
  unmatchedPaths: z.array(z.looseObject({})).optional(),
  indexSource: z.enum(['stored', 'listed']),
});

/** A failure row as the store keeps it (strict here: an answer with more is a drift). */
export const FailureRow = FailureRowSchema.strict();

export const FailureList = z.strictObject({
  runId: z.string(),
  rows: z.array(FailureRow),
  limit: z.number().int(),
  offset: z.number().int(),
});

export const StartedRun = z.strictObject({
  runId: z.string(),
  attached: z.boolean().meta({ description: 'True when a run of the job was already going' }),
});

export const StartedRetry = StartedRun.extend({ retryOf: z.string() });

export const CancelledRun = z.strictObject({
  runId: z.string(),
  status: z.enum(RUN_STATUSES).meta({
    description:
      '`cancelled` when no worker had taken the run; else its status until its worker ends it `cancelled`',
  }),
});

export const RunRequestBody = z.strictObject({
  job: z.string().min(1),
  full: z.boolean().optional(),
  mode: z.enum(['upsert', 'create-only', 'update-only']).optional(),
});

/** A query string's whole number; absent means the default. */
function whole(min: number, max: number, fallback: number) {
  return z.coerce.number().int().min(min).max(max).default(fallback);
}

export const RunsQuery = z.strictObject({
  job: z.string().min(1).optional(),
  status: z.enum(RUN_STATUSES).optional(),
  limit: whole(1, 500, 20),
  offset: whole(0, 1_000_000, 0),
});

export const FailuresQuery = z.strictObject({
  kind: z.enum(FAILURE_KINDS).optional(),
  field: z.string().min(1).optional(),
  /** JSON pages hold at most 1000 rows; CSV without a limit holds every row. */
  limit: z.coerce.number().int().min(1).max(1_000_000).optional(),
  offset: whole(0, 100_000_000, 0),
});

export const PlanQuery = z.strictObject({
  full: z.enum(['true', 'false']).optional(),
  mode: z.enum(['upsert', 'create-only', 'update-only']).optional(),
});
