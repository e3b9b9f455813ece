/**
 * The ops API: jobs, runs, their failures, and starting runs, as JSON under
 * /api (the paths and shapes are in src/ops/openapi.ts). Every route calls
 * the same engine functions as the CLI: `listJobs`, `planJob`, `startRun`,
 * `retryRun`, `cancelRun`, `runSummary`, `failurePages`, `pauseJob`/`resumeJob`
 * and the CLI's own CSV writer; nothing here computes a result of its own.
 */
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import type { z } from 'zod';
import type { Config } from '../config.js';
import { unmatchedPaths } from '../crm/path-coverage.js';
import type { RunJobData } from '../engine/payloads.js';
import { jobSchedule, listJobs } from '../engine/job-service.js';
import { planJob, planOutcomes } from '../engine/dry-run.js';
import { listRunDetails, runDetail } from '../engine/run-history.js';
import { failurePages, printCsv } from '../engine/run-failures.js';
import { cancelRun, retryRun, startRun } from '../engine/run-service.js';
import type { JobLoader } from '../jobs/job-loader.js';
import { silentLogger, type Logger } from '../log.js';
import type { PlatformClient } from '../platform/client.js';
import { pauseJob, pauseOf, resumeJob } from '../schedule/pause.js';
import type { TypedQueue } from '../queue/queues.js';
import type { StateStore } from '../state/store.js';
import { ApiError, errorText, parseInput, queryOf, sendError, statusOf } from './api-http.js';
import { FailuresQuery, PlanQuery, RunRequestBody, RunsQuery } from './api-schemas.js';
import { openApiDocument } from './openapi.js';

export interface OpsApiDeps {
  store: StateStore;
  runQueue: TypedQueue<RunJobData>;
  loadJob: JobLoader;
  /** Lists the platform for a plan when the stored index is stale; never writes. */
  client: PlatformClient;
  config: Pick<Config, 'jobsDir' | 'mappingsDir' | 'sourceEnv'>;
  /** Overrides `config.jobsDir` (the `--jobs` option). */
  jobsDir?: string;
  logger?: Logger;
}

/** A request body is a small JSON object: anything larger is refused before it is read whole. */
export const MAX_BODY_BYTES = 16 * 1024;

/** JSON pages of failure rows hold at most this many. */
const FAILURE_PAGE_MAX = 1_000;
const FAILURE_PAGE_DEFAULT = 100;

type Handler = (req: Request, res: Response) => Promise<void>;

/** The API's routes; the ops server's door (door.ts) has checked Host, token and site before. */
export function opsApi(deps: OpsApiDeps): Router {
  const logger = deps.logger ?? silentLogger;
  const router = express.Router();
  const document = openApiDocument();
  const jsonBody = express.json({ limit: MAX_BODY_BYTES, strict: true, type: () => true });

  /** Runs a handler; an error becomes a one-line JSON answer (details of a 5xx go to the log). */
  const route =
    (handler: Handler) =>
    (req: Request, res: Response): void => {
      handler(req, res).catch((err: unknown) => {
        const status = statusOf(err);
        if (status >= 500) logger.error({ err, path: req.path }, 'ops API request failed');
        if (res.headersSent) {
          res.destroy();
          return;
        }
        sendError(res, status, errorText(err));
      });
    };

  /** A body that starts work: JSON and small (the door has checked it comes from this site). */
  const workBody = (req: Request, res: Response, next: NextFunction) => {
    const hasBody =
      Number(req.get('content-length') ?? 0) > 0 || req.get('transfer-encoding') !== undefined;
    if (hasBody && !req.is('application/json')) {
      sendError(res, 415, 'send the body as application/json');
      return;
    }
    jsonBody(req, res, next);
  };

  router.get('/openapi.json', (_req, res) => {
    res.json(document);
  });

  // Pause state is kept beside the sync state, under the same prefix.
  const redis = deps.store.connection;
  const prefix = deps.store.keys.prefix;

  router.get(
    '/jobs',
    route(async (_req, res) => {
      res.json(
        await listJobs({
          store: deps.store,
          pauseOf: (job) => pauseOf(redis, prefix, job),
          config: deps.config,
          ...(deps.jobsDir !== undefined && { jobsDir: deps.jobsDir }),
          loadJob: deps.loadJob,
        }),
      );
    }),
  );

  /** A request that changes a schedule takes no body. */
  const noFields = (req: Request) => {
    if (req.body !== undefined && Object.keys(req.body as object).length > 0)
      throw new ApiError(400, 'body: this request takes no fields');
  };

  router.post(
    '/jobs/:name/pause',
    workBody,
    route(async (req, res) => {
      noFields(req);
      const def = deps.loadJob(String(req.params.name));
      if (def.schedule === undefined)
        throw new ApiError(409, `job ${def.name} has no schedule to pause`);
      const paused = await pauseJob(redis, prefix, def.name, 'ops-api');
      logger.info({ job: def.name, pausedBy: paused.by }, 'schedule paused');
      res.json(jobSchedule(def, paused));
    }),
  );

  router.post(
    '/jobs/:name/resume',
    workBody,
    route(async (req, res) => {
      noFields(req);
      const def = deps.loadJob(String(req.params.name));
      if (await resumeJob(redis, prefix, def.name)) {
        logger.info({ job: def.name }, 'schedule resumed');
      }
      res.json(jobSchedule(def, null));
    }),
  );

  router.get(
    '/jobs/:name/plan',
    route(async (req, res) => {
      const query = parseInput(PlanQuery, queryOf(req), 'query');
      const name = String(req.params.name);
      // A plan reads the whole export: the same plan asked again while one is made waits for it.
      const key = JSON.stringify([name, query.full, query.mode]);
      let planning = plans.get(key);
      if (!planning) {
        planning = makePlan(name, query).finally(() => plans.delete(key));
        plans.set(key, planning);
      }
      res.json(await planning);
    }),
  );

  const plans = new Map<string, Promise<unknown>>();
  const makePlan = async (name: string, query: z.output<typeof PlanQuery>) => {
    const result = await planJob(
      {
        store: deps.store,
        client: deps.client,
        logger,
        loadJob: deps.loadJob,
        sourceEnv: deps.config.sourceEnv,
      },
      name,
      { full: query.full === 'true', ...(query.mode !== undefined && { mode: query.mode }) },
    );
    return {
      runId: null,
      job: name,
      status: 'dry-run',
      actions: result.actions,
      counts: planOutcomes(result.counts),
      warnings: result.warnings,
      ...(result.paths && { unmatchedPaths: unmatchedPaths(result.paths) }),
      indexSource: result.indexSource,
    };
  };

  router.get(
    '/runs',
    route(async (req, res) => {
      const query = parseInput(RunsQuery, queryOf(req), 'query');
      const runs = await listRunDetails(deps.store, query);
      res.json({ runs, limit: query.limit, offset: query.offset });
    }),
  );

  router.post(
    '/runs',
    workBody,
    route(async (req, res) => {
      const body = parseInput(RunRequestBody, req.body, 'body');
      const started = await startRun(
        { store: deps.store, runQueue: deps.runQueue, loadJob: deps.loadJob },
        body.job,
        { full: body.full === true, ...(body.mode !== undefined && { mode: body.mode }) },
      );
      res.status(202).json({ runId: started.runId, attached: started.attached });
    }),
  );

  const runOf = async (req: Request) => {
    const runId = String(req.params.runId);
    const run = await deps.store.runs.get(runId);
    if (!run) throw new ApiError(404, `no run ${runId}`);
    return run;
  };

  router.get(
    '/runs/:runId',
    route(async (req, res) => {
      res.json(runDetail(await runOf(req)));
    }),
  );

  router.get(
    '/runs/:runId/failures',
    route(async (req, res) => {
      const query = parseInput(FailuresQuery, queryOf(req), 'query');
      const run = await runOf(req);
      const filter = {
        ...(query.kind !== undefined && { kind: query.kind }),
        ...(query.field !== undefined && { field: query.field }),
      };
      if (req.accepts(['application/json', 'text/csv']) === 'text/csv') {
        const rows = failurePages(deps.store, run.id, query.offset, query.limit, filter);
        res
          .status(200)
          .type('text/csv; charset=utf-8')
          .attachment(`failures-${run.id.replace(/[^A-Za-z0-9_-]/g, '_')}.csv`);
        await printCsv(rows, (text) => writeOut(res, text));
        res.end();
        return;
      }
      if (query.limit !== undefined && query.limit > FAILURE_PAGE_MAX) {
        throw new ApiError(
          400,
          `query: limit: at most ${FAILURE_PAGE_MAX} rows a page in JSON (ask for text/csv for all)`,
        );
      }
      const limit = query.limit ?? FAILURE_PAGE_DEFAULT;
      const rows = [];
      for await (const page of failurePages(deps.store, run.id, query.offset, limit, filter))
        rows.push(...page);
      res.json({ runId: run.id, rows, limit, offset: query.offset });
    }),
  );

  router.post(
    '/runs/:runId/retry',
    workBody,
    route(async (req, res) => {
      if (req.body !== undefined && Object.keys(req.body as object).length > 0)
        throw new ApiError(400, 'body: a retry takes no fields');
      const runId = String(req.params.runId);
      const started = await retryRun(
        { store: deps.store, runQueue: deps.runQueue, loadJob: deps.loadJob },
        runId,
      );
      res.status(202).json({ runId: started.runId, attached: started.attached, retryOf: runId });
    }),
  );

  router.post(
    '/runs/:runId/cancel',
    workBody,
    route(async (req, res) => {
      if (req.body !== undefined && Object.keys(req.body as object).length > 0)
        throw new ApiError(400, 'body: a cancel takes no fields');
      const cancelled = await cancelRun({ store: deps.store }, String(req.params.runId));
      res.status(202).json(cancelled);
    }),
  );

  router.use((req, res) => {
    sendError(res, 404, `no route ${req.method} ${req.baseUrl}${req.path}`);
  });

  // Errors of the body parser (too large, not JSON) and of anything before a route.
  router.use((err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    const type = (err as { type?: string } | null)?.type;
    if (type === 'entity.too.large')
      sendError(res, 413, `the body is over ${MAX_BODY_BYTES} bytes`);
    else if (type === 'entity.parse.failed') sendError(res, 400, 'the body is not JSON');
    else if (type === 'encoding.unsupported' || type === 'charset.unsupported')
      sendError(res, 415, 'send the body as UTF-8 JSON');
    else {
      logger.error({ err }, 'ops API request failed');
      sendError(res, 500, errorText(err));
    }
  });

  return router;
}

/** Writes to the response, waiting when the client reads slowly; gives up when it has gone. */
function writeOut(res: Response, text: string): Promise<void> {
  if (res.destroyed) return Promise.reject(new Error('the client closed the connection'));
  return new Promise((resolve, reject) => {
    if (res.write(text)) {
      resolve();
      return;
    }
    const done = () => {
      res.off('close', gone);
      resolve();
    };
    const gone = () => {
      res.off('drain', done);
      reject(new Error('the client closed the connection'));
    };
    res.once('drain', done);
    res.once('close', gone);
  });
}
