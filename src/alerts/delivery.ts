/**
 * Alerts on their way out: a BullMQ queue `alerts` (one job per alert, its
 * id the alert's, so a run's end reported twice queues one alert), and its
 * worker, which POSTs the payload to the webhook with a timeout and leaves
 * retries with backoff to BullMQ. A webhook that is down or never answers
 * costs the alert worker a slot for the timeout, never the sync: runs only
 * add a job.
 *
 * The webhook URL is a secret (a Slack webhook's path is its key): it is
 * never queued, logged or put into an error. The worker reads it when it
 * delivers, from the job's `alerts:` or CRM_SYNC_ALERT_WEBHOOK. Each attempt
 * carries a timestamp, the alert's id as its idempotency key and, with
 * CRM_SYNC_ALERT_SECRET, a signature (signature.ts). An alert given up after
 * its last attempt is logged at error once, counted
 * (`crm_sync_alerts_dropped_total`) and noted on its run's record.
 */
import { Queue, Worker, type ConnectionOptions, type Job } from 'bullmq';
import { UnrecoverableError } from 'bullmq';
import type { Config } from '../config.js';
import type { Metrics } from '../ops/metrics.js';
import { DEFAULT_PREFIX } from '../defaults.js';
import type { JobDefinition } from '../jobs/definition.js';
import { redactSecrets, registerSecret, scrubText, silentLogger, type Logger } from '../log.js';
import type { RunRecord, Runs } from '../state/runs.js';
import { alertPayload } from './payload.js';
import { alertHeaders } from './signature.js';
import {
  alertId,
  alertPolicy,
  missedAlert,
  runAlert,
  topFields,
  webhookReference,
  type Alert,
  type AlertPolicy,
  type MissedSlot,
} from './rules.js';

export const ALERT_QUEUE = 'alerts';

/** Finished alerts are kept this long (seconds) and this many: the window of deduplication. */
const RETENTION = {
  completed: { age: 30 * 24 * 3600, count: 5_000 },
  failed: { age: 30 * 24 * 3600, count: 5_000 },
};

/** Problem rows read to name the fields of an alert (a bounded read at the run's end). */
const FIELD_SAMPLE = 2_000;

export type AlertSettings = Config['alerts'];
export type AlertQueue = Queue<Alert, unknown, string, Alert, unknown, string>;

interface QueueSettings {
  connection: ConnectionOptions;
  prefix?: string;
}

export function createAlertQueue(
  settings: QueueSettings & { alerts: Pick<AlertSettings, 'attempts' | 'backoffMs'> },
): AlertQueue {
  return new Queue<Alert, unknown, string, Alert, unknown, string>(ALERT_QUEUE, {
    connection: settings.connection,
    prefix: settings.prefix ?? DEFAULT_PREFIX,
    defaultJobOptions: {
      attempts: settings.alerts.attempts,
      backoff: { type: 'exponential', delay: settings.alerts.backoffMs },
      removeOnComplete: RETENTION.completed,
      removeOnFail: RETENTION.failed,
    },
    streams: { events: { maxLen: 2_000 } },
  });
}

/** The job's alert settings joined with the global ones; the global ones alone when the job does not load. */
export function policyOf(
  loadJob: (name: string) => JobDefinition,
  jobName: string,
  alerts: AlertSettings,
): AlertPolicy | undefined {
  let def: JobDefinition | undefined;
  try {
    def = loadJob(jobName);
  } catch {
    def = undefined;
  }
  return alertPolicy(def?.alerts, alerts);
}

export interface AlertEmitter {
  /** A run ended (completed, failed or stopped): queues its alert, if its policy makes one. */
  runEnded(run: RunRecord): Promise<void>;
  /** A scheduled slot started no run of its own. */
  slotMissed(m: MissedSlot): Promise<void>;
}

/**
 * Queues alerts. Never throws: an alert that cannot be queued is logged, and
 * the run or the schedule goes on as it would without alerts.
 */
export function alertEmitter(opts: {
  queue: AlertQueue;
  loadJob: (name: string) => JobDefinition;
  alerts: AlertSettings;
  /** Reads the field names of a run's problem rows; none without it. */
  store?: { runs: Pick<Runs, 'listFailures'> };
  logger?: Logger;
}): AlertEmitter {
  const logger = opts.logger ?? silentLogger;
  const add = async (alert: Alert): Promise<void> => {
    await opts.queue.add(alert.kind, alert, { jobId: alertId(alert) });
    logger.info({ alert: alert.kind, job: alert.job, runId: alert.runId }, 'alert queued');
  };
  return {
    async runEnded(run) {
      try {
        const policy = policyOf(opts.loadJob, run.job, opts.alerts);
        if (!policy || !runAlert(run, policy)) return;
        const c = run.counts;
        const fields =
          opts.store && c.rejected + c.failed + c.invalid > 0
            ? topFields(await opts.store.runs.listFailures(run.id, { limit: FIELD_SAMPLE }))
            : [];
        await add(runAlert(run, policy, fields)!);
      } catch (err) {
        logger.error({ err, runId: run.id }, 'could not queue the alert of a run');
      }
    },
    async slotMissed(m) {
      try {
        const policy = policyOf(opts.loadJob, m.job, opts.alerts);
        const alert = policy && missedAlert(m, policy);
        if (alert) await add(alert);
      } catch (err) {
        logger.error({ err, job: m.job }, 'could not queue the alert of a missed slot');
      }
    },
  };
}

/** The webhook's URL, read now from the environment when the job names a variable. */
export function resolveWebhook(webhook: string, env: Config['sourceEnv']): string {
  const name = webhookReference(webhook);
  if (name === undefined) {
    registerSecret(webhook);
    return webhook;
  }
  const url = env[name];
  if (url === undefined || url === '') {
    throw new UnrecoverableError(
      `the alerts webhook names the environment variable ${name}, which is not set`,
    );
  }
  registerSecret(url);
  return url;
}

/** Where a log may say an alert went: the host only (the path may be the webhook's key). */
function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return '(invalid URL)';
  }
}

/**
 * POSTs one payload (its exact bytes, with the headers given). A 2xx
 * delivers; anything else (another status, a timeout, a refused connection)
 * throws, for BullMQ's next attempt. The error names the host, never the URL.
 */
export async function postAlert(
  url: string,
  body: string,
  timeoutMs: number,
  headers: Record<string, string> = {},
): Promise<number> {
  const host = hostOf(url);
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'user-agent': 'crm-sync-alerts', ...headers },
      body,
      redirect: 'manual',
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (err) {
    const e = err as Error & { cause?: { code?: string } };
    const why =
      e.name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : (e.cause?.code ?? e.message);
    throw new Error(`alert webhook at ${host}: ${redactSecrets(scrubText(String(why)))}`);
  }
  await res.body?.cancel().catch(() => undefined);
  if (res.status < 200 || res.status > 299)
    throw new Error(`alert webhook at ${host} answered HTTP ${res.status}`);
  return res.status;
}

/** Whether this failure was the alert's last attempt: BullMQ will not try it again. */
function isLastAttempt(job: Job<Alert>, err: Error): boolean {
  return err instanceof UnrecoverableError || job.attemptsMade >= (job.opts.attempts ?? 1);
}

/** The worker delivering queued alerts. */
export function startAlertWorker(opts: {
  connection: ConnectionOptions;
  prefix?: string;
  loadJob: (name: string) => JobDefinition;
  alerts: AlertSettings;
  env: Config['sourceEnv'];
  logger?: Logger;
  concurrency?: number;
  /** Counts alerts given up (`alertsDropped`). */
  metrics?: Pick<Metrics, 'alertsDropped'>;
  /** Where an alert about a run that is given up is noted on the run's record. */
  runs?: Pick<Runs, 'update'>;
}): Worker {
  const logger = opts.logger ?? silentLogger;
  const worker = new Worker<Alert>(
    ALERT_QUEUE,
    async (job: Job<Alert>) => {
      const alert = job.data;
      const policy = policyOf(opts.loadJob, alert.job, opts.alerts);
      // The webhook was removed since the alert was queued: nothing to deliver to.
      if (!policy) return 'no webhook';
      const url = resolveWebhook(policy.webhook, opts.env);
      const body = JSON.stringify(alertPayload(alert, policy.format, opts.alerts.publicUrl));
      const headers = alertHeaders({
        body,
        eventId: job.id ?? alertId(alert),
        ...(opts.alerts.secret !== undefined && { secret: opts.alerts.secret }),
      });
      const status = await postAlert(url, body, opts.alerts.timeoutMs, headers);
      logger.info(
        { alert: alert.kind, job: alert.job, runId: alert.runId, webhook: hostOf(url), status },
        'alert delivered',
      );
      return status;
    },
    {
      connection: opts.connection,
      prefix: opts.prefix ?? DEFAULT_PREFIX,
      concurrency: opts.concurrency ?? 4,
      removeOnComplete: RETENTION.completed,
      removeOnFail: RETENTION.failed,
    },
  );
  worker.on('failed', (job, err) => {
    if (!job) return;
    const alert = job.data;
    const fields = { err, alert: alert.kind, job: alert.job, runId: alert.runId };
    if (!isLastAttempt(job, err)) {
      logger.warn(
        { ...fields, attempt: job.attemptsMade, attempts: job.opts.attempts },
        'alert not delivered yet; BullMQ tries it again',
      );
      return;
    }
    logger.error(
      { ...fields, attempts: job.attemptsMade },
      'alert dropped: not delivered after its last attempt',
    );
    opts.metrics?.alertsDropped.inc({ rule: alert.kind });
    // A missed slot's run id is the run still going, not the one the alert is about.
    if (opts.runs && alert.runId !== undefined && alert.kind !== 'missed') {
      const why = `the ${alert.kind} alert was not delivered (${job.attemptsMade} attempt(s)): ${err.message}`;
      opts.runs
        .update(alert.runId, { alertUndelivered: why })
        .catch((e: unknown) =>
          logger.error(
            { err: e, runId: alert.runId },
            'could not note the dropped alert on its run',
          ),
        );
    }
  });
  worker.on('error', (err) => logger.error({ err, worker: 'alert worker' }, 'worker error'));
  return worker;
}
