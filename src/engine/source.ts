/**
 * The source a run reads: the job's, or the one given with `--source` (a path
 * or an http(s) URL), keeping the job's format settings.
 */
import { sourceName, type SourceSpec } from '../crm/source.js';
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
