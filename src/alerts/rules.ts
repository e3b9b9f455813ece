/**
 * Which run outcome makes which alert, pure. A job's `alerts:` settings (or
 * the global CRM_SYNC_ALERT_WEBHOOK) say where alerts go and on what; a run
 * that ended, or a scheduled slot that did not start a run, becomes at most
 * one `Alert`: plain facts (job, run id, status, reason, counts, field
 * names), never a row value, never the webhook itself and no credential (a
 * reason is scrubbed here, whoever built the error), so it may be kept in
 * Redis while it waits for delivery.
 */
import { z } from 'zod';
import { ENV_REF, urlCredentials } from '../crm/source-spec.js';
import { ALERT_FORMATS, type AlertFormat } from '../defaults.js';
import { scrubText } from '../log.js';

export const ALERT_KINDS = ['failed', 'stopped', 'rejected-above', 'missed'] as const;
export type AlertKind = (typeof ALERT_KINDS)[number];

export { ALERT_FORMATS, type AlertFormat } from '../defaults.js';

/** A whole value that is one `${NAME}` reference to an environment variable. */
const WHOLE_ENV_REF = /^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$/;

/** The `alerts:` block of a job file. */
export const JobAlertsSchema = z.strictObject({
  /**
   * `${NAME}` (the URL is read from the environment variable NAME, the way a
   * webhook's secret should be kept), or an http(s) URL without credentials
   * (a user name, a password, or a query parameter that looks like one).
   */
  webhook: z
    .string()
    .superRefine((s, ctx) => {
      if (WHOLE_ENV_REF.test(s)) return;
      const problem = webhookUrlProblem(s);
      if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
    })
    .optional(),
  format: z.enum(ALERT_FORMATS).optional(),
  /** What makes an alert; all four when not given, none with `[]`. */
  on: z.array(z.enum(ALERT_KINDS)).optional(),
  /** `rejected-above` fires when a completed run's rejected + failed rows exceed this. */
  rejectedAbove: z.number().int().min(0).optional(),
});
export type JobAlerts = z.output<typeof JobAlertsSchema>;

/** Why a literal webhook URL is refused, or undefined when it is fine. */
export function webhookUrlProblem(url: string): string | undefined {
  if (ENV_REF.test(url))
    return 'a ${NAME} reference is the whole webhook (NAME holds the whole URL), never a part of it';
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return 'a webhook is an http(s) URL or a ${NAME} reference to an environment variable';
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return 'a webhook URL is http or https';
  if (u.username !== '' || u.password !== '')
    return 'a webhook URL must not carry a user name or password: write ${NAME} and set NAME';
  const params = urlCredentials(url)?.params ?? [];
  if (params.length > 0)
    return `a webhook URL must not carry a credential (query parameter ${params.join(', ')}): write \${NAME} and set NAME to the URL`;
  return undefined;
}

/**
 * Why a webhook cannot be delivered to in this environment, or undefined:
 * a `${NAME}` whose variable is not set or is empty. Alerts sent there would
 * be dropped, so `validate` and the jobs list say so before any run does.
 */
export function webhookEnvProblem(
  webhook: string,
  env: Readonly<Record<string, string | undefined>>,
): string | undefined {
  const name = webhookReference(webhook);
  if (name === undefined) return undefined;
  const value = env[name];
  if (value === undefined || value === '')
    return `the webhook names the environment variable ${name}, which is ${value === undefined ? 'not set' : 'empty'}: this job's alerts cannot be delivered`;
  return undefined;
}

/**
 * The problems of the jobs' `alerts.webhook` in this environment, each
 * naming its file and path, as `validate` and the jobs list show them.
 */
export function jobAlertProblems(
  jobs: readonly { file: string; alerts?: JobAlerts }[],
  env: Readonly<Record<string, string | undefined>>,
): string[] {
  return jobs.flatMap((j) => {
    const webhook = j.alerts?.webhook;
    const problem = webhook === undefined ? undefined : webhookEnvProblem(webhook, env);
    return problem === undefined ? [] : [`${j.file}: alerts.webhook: ${problem}`];
  });
}

/** The environment variable a webhook names (`${NAME}`), or undefined for a literal URL. */
export function webhookReference(webhook: string): string | undefined {
  return WHOLE_ENV_REF.exec(webhook)?.[1];
}

/** The global settings (config's `alerts`). */
export interface GlobalAlerts {
  webhook?: string;
  format: AlertFormat;
}

/** Where a job's alerts go and on what, once the job's and the global settings are joined. */
export interface AlertPolicy {
  /** A `${NAME}` reference or a URL; resolved only when delivering. */
  webhook: string;
  format: AlertFormat;
  on: readonly AlertKind[];
  rejectedAbove: number;
}

/** The job's settings over the global ones; undefined when there is no webhook at all. */
export function alertPolicy(
  job: JobAlerts | undefined,
  global: GlobalAlerts,
): AlertPolicy | undefined {
  const webhook = job?.webhook ?? global.webhook;
  if (webhook === undefined) return undefined;
  return {
    webhook,
    format: job?.format ?? global.format,
    on: job?.on ?? ALERT_KINDS,
    rejectedAbove: job?.rejectedAbove ?? 0,
  };
}

/** The counts an alert carries: how many rows, never which. */
export interface AlertCounts {
  read: number;
  created: number;
  updated: number;
  unchanged: number;
  invalid: number;
  conflict: number;
  rejected: number;
  failed: number;
}

/** One alert, as queued: no webhook, no row value. */
export interface Alert {
  kind: AlertKind;
  job: string;
  /** The run that ended; for a missed slot, the run still going, if any. */
  runId?: string;
  status?: string;
  /** The run's error or the threshold's reason, without credentials (`scrubText`). */
  reason?: string;
  counts?: AlertCounts;
  /** Field names the run's rejected, failed and invalid rows name, most frequent first. */
  fields?: string[];
  /** A missed slot (ISO, UTC); for several, the last. */
  slot?: string;
  /** Slots missed (more than one when no scheduler was running). */
  missed?: number;
  /** When it happened, ISO. */
  at: string;
}

/** What alert rules read of an ended run. */
export interface EndedRun {
  id: string;
  job: string;
  status: string;
  error?: string;
  finishedAt?: number;
  counts: AlertCounts;
}

/** The alert an ended run makes under a policy, or undefined. */
export function runAlert(
  run: EndedRun,
  policy: Pick<AlertPolicy, 'on' | 'rejectedAbove'>,
  fields: readonly string[] = [],
): Alert | undefined {
  const kind = runAlertKind(run, policy.rejectedAbove);
  if (kind === undefined || !policy.on.includes(kind)) return undefined;
  return {
    kind,
    job: run.job,
    runId: run.id,
    status: run.status,
    ...(run.error !== undefined && { reason: scrubText(run.error) }),
    counts: pickCounts(run.counts),
    ...(fields.length > 0 && { fields: [...fields] }),
    at: new Date(run.finishedAt ?? Date.now()).toISOString(),
  };
}

function runAlertKind(run: EndedRun, rejectedAbove: number): AlertKind | undefined {
  switch (run.status) {
    case 'failed':
      return 'failed';
    case 'stopped':
      return 'stopped';
    case 'completed':
      return run.counts.rejected + run.counts.failed > rejectedAbove ? 'rejected-above' : undefined;
    default:
      return undefined;
  }
}

function pickCounts(c: AlertCounts): AlertCounts {
  return {
    read: c.read,
    created: c.created,
    updated: c.updated,
    unchanged: c.unchanged,
    invalid: c.invalid,
    conflict: c.conflict,
    rejected: c.rejected,
    failed: c.failed,
  };
}

/** What the scheduler saw of a slot that started no run of its own. */
export interface MissedSlot {
  job: string;
  slot: string;
  /**
   * `overlap`: the previous run was still going, the slot attached to it;
   * `not-started`: the run could not be started (the job no longer loads, …);
   * `no-scheduler`: no scheduler was running at the slot (seen at the next start).
   */
  cause: 'overlap' | 'not-started' | 'no-scheduler';
  runId?: string;
  /** For `no-scheduler`: how many slots, the first and the last. */
  count?: number;
  first?: string;
  /** The error that kept the run from starting. */
  error?: string;
}

/** The alert a missed slot makes under a policy, or undefined. */
export function missedAlert(
  m: MissedSlot,
  policy: Pick<AlertPolicy, 'on'>,
  now: Date = new Date(),
): Alert | undefined {
  if (!policy.on.includes('missed')) return undefined;
  const reason =
    m.cause === 'overlap'
      ? `the slot started no run: the run ${m.runId ?? ''} of an earlier slot was still going`
      : m.cause === 'not-started'
        ? `the slot's run could not be started${m.error ? `: ${scrubText(m.error)}` : ''}`
        : `${m.count ?? 1} slot(s) from ${m.first ?? m.slot} to ${m.slot} passed while no scheduler was running`;
  return {
    kind: 'missed',
    job: m.job,
    ...(m.runId !== undefined && { runId: m.runId }),
    reason,
    slot: m.slot,
    missed: m.count ?? 1,
    at: now.toISOString(),
  };
}

/**
 * The queue job id of an alert: one alert per run and kind (or job and slot),
 * however many times the run's end is reported. BullMQ refuses `:` in ids.
 */
export function alertId(a: Pick<Alert, 'kind' | 'job' | 'runId' | 'slot'>): string {
  const subject = a.kind === 'missed' ? `${a.job}-${a.slot ?? ''}` : (a.runId ?? a.job);
  return `alert-${a.kind}-${subject}`.replace(/:/g, '');
}

/**
 * The field names of a run's problem rows, most frequent first (ties by
 * name), at most `limit`: what an operator looks at first, without a value.
 */
export function topFields(rows: readonly { kind: string; field?: string }[], limit = 10): string[] {
  const counts = new Map<string, number>();
  for (const r of rows) {
    if (r.field === undefined) continue;
    if (r.kind !== 'rejected' && r.kind !== 'failed' && r.kind !== 'invalid') continue;
    counts.set(r.field, (counts.get(r.field) ?? 0) + 1);
  }
  return [...counts]
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .slice(0, limit)
    .map(([f]) => f);
}
