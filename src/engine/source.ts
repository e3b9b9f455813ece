/**
 * The source a run reads: the job's, or the one given with `--source` (a path
 * or an http(s) URL), keeping the job's format settings.
 */
import { sourceName, urlCredentials, type SourceSpec } from '../crm/source.js';
import type { JobDefinition } from '../jobs/definition.js';
import type { RunJobRequest } from './payloads.js';

export function sourceOf(def: JobDefinition, req: Pick<RunJobRequest, 'source'>): SourceSpec {
  const { path: _path, url: _url, ...settings } = def.source;
  if (req.source === undefined) return def.source as SourceSpec;
  const isUrl = /^https?:\/\//i.test(req.source);
  return { ...settings, ...(isUrl ? { url: req.source } : { path: req.source }) } as SourceSpec;
}

/** How the source is shown in the run record: never with credentials. */
export function sourceLabel(def: JobDefinition, req: Pick<RunJobRequest, 'source'>): string {
  return sourceName(sourceOf(def, req));
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
