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
 * delivers, from the job's `alerts:` or CRM_SYNC_ALERT_WEBHOOK.
 */
import { Queue, Worker, type ConnectionOptions, type Job } from 'bullmq';
import { UnrecoverableError } from 'bullmq';
import type { Config } from '../config.js';
import { DEFAULT_PREFIX } from '../defaults.js';
import type { JobDefinition } from '../jobs/definition.js';
import { redactSecrets, registerSecret, scrubText, silentLogger, type Logger } from '../log.js';
import type { RunRecord } from '../state/runs.js';
import type { StateStore } from '../state/store.js';
import { alertPayload } from './payload.js';
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
  store?: Pick<StateStore, 'listFailures'>;
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
            ? topFields(await opts.store.listFailures(run.id, { limit: FIELD_SAMPLE }))
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
 * POSTs one payload. A 2xx delivers; anything else (another status, a
 * timeout, a refused connection) throws, for BullMQ's next attempt. The
 * error names the host, never the URL.
 */
export async function postAlert(url: string, body: unknown, timeoutMs: number): Promise<number> {
  const host = hostOf(url);
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'user-agent': 'crm-sync-alerts' },
      body: JSON.stringify(body),
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

/** The worker delivering queued alerts. */
export function startAlertWorker(opts: {
  connection: ConnectionOptions;
  prefix?: string;
  loadJob: (name: string) => JobDefinition;
  alerts: AlertSettings;
  env: Config['sourceEnv'];
  logger?: Logger;
  concurrency?: number;
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
      const status = await postAlert(
        url,
        alertPayload(alert, policy.format, opts.alerts.publicUrl),
        opts.alerts.timeoutMs,
      );
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
  worker.on('failed', (job, err) =>
    logger.warn(
      { err, alert: job?.data.kind, job: job?.data.job, attempt: job?.attemptsMade },
      'alert not delivered (BullMQ tries again until its attempts are used)',
    ),
  );
  worker.on('error', (err) => logger.error({ err, worker: 'alert worker' }, 'worker error'));
  return worker;
}
