/**
 * The source a run reads: the job's, or the one given with `--source` (a path
 * or an http(s) URL), keeping the job's format settings; with `{{since}}` in
 * its URL replaced by the start time of the pull (`since`).
 */
import { hasSince, withSince } from '../crm/since.js';
import { sourceName } from '../crm/source.js';
import { urlCredentials, type SourceSpec } from '../crm/source-spec.js';
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
  const { path: _path, url: _url, ...settings } = def.source;
  const isUrl = /^https?:\/\//i.test(req.source);
  return { ...settings, ...(isUrl ? { url: req.source } : { path: req.source }) } as SourceSpec;
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

/** A `--source` that would put a credential into Redis (in the queued run's data). */
export class SourceCredentialsError extends Error {
  readonly code = 'run.source-credentials';
  constructor(message: string) {
    super(message);
    this.name = 'SourceCredentialsError';
  }
}

/**
 * Refuses a `--source` URL with a credential written out: the run request is
 * stored in Redis for the worker, and secrets never go there. As in job files,
 * a credential is written as `${VAR}`, read from the worker's environment.
 */
export function checkSourceOverride(source: string): void {
  if (!/^https?:\/\//i.test(source)) return;
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
