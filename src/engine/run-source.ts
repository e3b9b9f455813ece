/**
 * The source a run reads: the job's, or the one given with `--source` (a path
 * or an http(s) URL), keeping the job's format settings; with `{{since}}` in
 * its URL replaced by the start time of the pull (`since`).
 *
 * A job's headers and CRM_SOURCE_AUTHORIZATION are credentials for the
 * origin of the job's own source URL, and go nowhere else: an override URL
 * on that origin keeps them; one on another origin (or any URL, for a job
 * that reads a file) is read without them, and is refused when the job's
 * source has headers of its own (it needs them). The check runs where a run
 * is asked for and again in the worker, which trusts nothing it finds in
 * the queue.
 */
import { hasSince, withSince } from '../crm/since.js';
import type { SourceEnv } from '../crm/source.js';
import { sourceName, urlCredentials, type SourceSpec } from '../crm/source-spec.js';
import type { JobDefinition } from '../jobs/definition.js';
import { stripCredentials } from '../state/redaction.js';
import type { RunRecord } from '../state/runs.js';
import type { RunJobRequest } from './payloads.js';

/**
 * The run's source. A URL's `{{since}}` becomes `since` (from `pullSince`),
 * or 1970-01-01T00:00:00Z when there is none: the whole set.
 */
export function sourceOf(
  def: JobDefinition,
  req: Pick<RunJobRequest, 'source'>,
  since?: Date,
): SourceSpec {
  const spec = rawSource(def, req);
  return spec.url === undefined ? spec : { ...spec, url: withSince(spec.url, since) };
}

/** The run's source as written, `{{since}}` still in it. */
function rawSource(def: JobDefinition, req: Pick<RunJobRequest, 'source'>): SourceSpec {
  if (req.source === undefined) return def.source as SourceSpec;
  const { path: _path, url: _url, headers, ...settings } = def.source;
  if (!isUrl(req.source)) return { ...settings, path: req.source } as SourceSpec;
  const keepHeaders = headers !== undefined && !isForeign(def, req.source);
  return { ...settings, ...(keepHeaders && { headers }), url: req.source } as SourceSpec;
}

function isUrl(source: string): boolean {
  return /^https?:\/\//i.test(source);
}

function originOf(url: string): string | undefined {
  try {
    return new URL(url).origin;
  } catch {
    return undefined;
  }
}

/** The origin of the job's own source URL; a file-source job has none. */
function jobOrigin(def: JobDefinition): string | undefined {
  return def.source.url === undefined ? undefined : originOf(def.source.url);
}

/** Whether an override URL leaves the origin of the job's own source URL. */
function isForeign(def: JobDefinition, source: string): boolean {
  const own = jobOrigin(def);
  return own === undefined || originOf(source) !== own;
}

/**
 * The variables a run's source may read: the worker's, without
 * CRM_SOURCE_AUTHORIZATION when an override URL leaves the job's origin.
 */
export function sourceEnvOf(
  def: JobDefinition,
  req: Pick<RunJobRequest, 'source'>,
  env: SourceEnv,
): SourceEnv {
  if (req.source === undefined || !isUrl(req.source) || !isForeign(def, req.source)) return env;
  const { CRM_SOURCE_AUTHORIZATION: _auth, ...rest } = env;
  return rest;
}

/** How the source is shown in the run record: never with credentials. */
export function sourceLabel(def: JobDefinition, req: Pick<RunJobRequest, 'source'>): string {
  return sourceName(sourceOf(def, req));
}

/**
 * The start time an incremental pull asks the CRM for changes since, or
 * undefined for a whole pull: when the URL has no `{{since}}`, on `--full`,
 * and when no earlier run qualifies.
 *
 * It is the start (`startedAt`) of the newest completed run of the job that
 * read the job's own source in the job's own mode and left no row to try
 * again (none failed, rejected or withheld as a conflict). A row that failed
 * is only read again if the pull reaches back before it: taking the start of
 * a later run would skip it until the CRM record changes again. Records
 * changed while that run was reading are read again (they are unchanged to
 * the content hash, so they cost no write). `runs` is the job's history,
 * newest first.
 */
export function pullSince(
  def: JobDefinition,
  req: Pick<RunJobRequest, 'source' | 'full' | 'mode'>,
  runs: readonly RunRecord[],
): Date | undefined {
  const url = rawSource(def, req).url;
  if (url === undefined || !hasSince(url) || req.full) return undefined;
  const label = stripCredentials(sourceLabel(def, req));
  const mode = req.mode ?? def.mode;
  for (const run of runs) {
    if (run.job !== def.name || run.status !== 'completed') continue;
    if (run.source !== label || run.mode !== mode) continue;
    const left = run.counts.failed + run.counts.rejected + run.counts.conflict;
    if (left > 0) continue;
    return new Date(run.startedAt ?? run.createdAt);
  }
  return undefined;
}

/** A `--source` that would put a credential into Redis, or send the job's credentials to another origin. */
export class SourceCredentialsError extends Error {
  readonly code = 'run.source-credentials';
  constructor(message: string) {
    super(message);
    this.name = 'SourceCredentialsError';
  }
}

/**
 * Refuses a `--source` URL with a credential written out (the run request is
 * stored in Redis for the worker, and secrets never go there; as in job
 * files, a credential is written as `${VAR}`, read from the worker's
 * environment), and one on another origin than the job's source URL when
 * that source has headers: it needs them, and they go to its origin only.
 */
export function checkSourceOverride(def: JobDefinition, source: string): void {
  if (!isUrl(source)) return;
  if (isForeign(def, source) && Object.keys(def.source.headers ?? {}).length > 0) {
    const own = jobOrigin(def);
    throw new SourceCredentialsError(
      `--source: ${originOf(source) ?? 'the URL'} is not the origin of the job's source${own ? ` (${own})` : ''}; the job's headers are sent to that origin only: give a URL on it, or a file`,
    );
  }
  // Not a URL we can read: the source layer says so when the run reads it.
  const found = urlCredentials(source);
  if (!found) return;
  if (found.userinfo) {
    throw new SourceCredentialsError(
      "--source: the URL must not carry credentials; use the job's headers with ${VAR} references",
    );
  }
  const [name] = found.params;
  if (name !== undefined) {
    throw new SourceCredentialsError(
      `--source: query parameter ${name} looks like a credential; write it as \${VAR} and set VAR in the worker's environment`,
    );
  }
}
