/**
 * What a source spec may say, and the credential rules a job file's source
 * meets: one of a local path or an http(s) URL, the format and how to read
 * it, and credentials only by `${NAME}` reference to the environment (never
 * written out in a header or the URL), and the name a source is shown by.
 * The bytes it names are read by source.ts.
 */
import { z } from 'zod';
import { isSecretParam } from '../log.js';
import { encodingName } from './decode.js';
import { parseRecordPath } from './envelope.js';
import { PathSyntax } from './json-path.js';
import { PageRetrySpec, PaginateSpec, checkPaging } from './pagination.js';

export const SOURCE_FORMATS = ['csv', 'ndjson', 'json'] as const;
export type SourceFormat = (typeof SOURCE_FORMATS)[number];

/** JSON: dotted path to the array of records inside a top-level object. */
export const RecordsPath = z
  .string()
  .regex(/^[^.]+(\.[^.]+)*$/, 'must be a dotted path such as "results" or "data.items"');

/** Where each line's or element's record is inside it: a path such as `data` or `record.data`. */
export const RecordPath = z.string().superRefine((text, ctx) => {
  const path = parseRecordPath(text);
  if (path instanceof PathSyntax) ctx.addIssue({ code: 'custom', message: path.reason });
});

/** The export's encoding when it has no byte-order mark: `auto` or a WHATWG label Node can decode. */
export const SourceEncoding = z.string().refine((label) => encodingName(label) !== undefined, {
  error: (issue) =>
    `unknown encoding ${JSON.stringify(issue.input)}: give auto or a label such as utf-8, windows-1252, iso-8859-1, utf-16le or shift_jis`,
});

const SourceFields = z.strictObject({
  path: z.string().min(1).optional(),
  /** An http(s) URL; `${NAME}` stands for the environment variable NAME, read when opened. */
  url: z.string().min(1).optional(),
  format: z.enum(SOURCE_FORMATS).optional(),
  /** `tab` may be written for a tab, which YAML shows only as "\t". */
  delimiter: z
    .enum([',', ';', '\t', '|', 'tab'])
    .transform((d) => (d === 'tab' ? '\t' : d))
    .optional(),
  recordsPath: RecordsPath.optional(),
  /** Each NDJSON line's or array element's record is at this path (envelope.ts). */
  recordPath: RecordPath.optional(),
  /** Airbyte or Singer output: the RECORD messages of this stream (envelope.ts). */
  stream: z.string().min(1).optional(),
  /**
   * For an export without a byte-order mark: `auto` (the default: each row as
   * UTF-8 when it is, else as Windows-1252) or a WHATWG label (utf-8,
   * windows-1252, shift_jis, …) that the whole file is read in.
   */
  encoding: SourceEncoding.optional(),
  /** HTTP headers for a URL source; `${NAME}` is replaced by the environment variable NAME. */
  headers: z.record(z.string(), z.string()).optional(),
  timeoutMs: z.number().int().positive().optional(),
  /** A CRM list API's pages: a preset name or the rules (pagination.ts, docs/MAPPING.md). */
  paginate: PaginateSpec.optional(),
  retry: PageRetrySpec.optional(),
});

/** A source as the checks see it: any field may have failed its own check. */
type SourceInput = {
  path?: unknown;
  url?: unknown;
  format?: unknown;
  recordsPath?: unknown;
  recordPath?: unknown;
  stream?: unknown;
  headers?: unknown;
  paginate?: unknown;
  retry?: unknown;
};

function isInput(s: unknown): s is SourceInput {
  return s !== null && typeof s === 'object';
}

/** What the fields must meet together: one of path or url, a URL that can be read, paging. */
function checkSource(s: unknown, ctx: z.RefinementCtx): void {
  if (!isInput(s)) return;
  if ((s.path === undefined) === (s.url === undefined)) {
    ctx.addIssue({ code: 'custom', message: 'give exactly one of path or url' });
  }
  if (typeof s.url === 'string') {
    const issue = (message: string) => ctx.addIssue({ code: 'custom', path: ['url'], message });
    const found = urlCredentials(s.url);
    if (!found) issue('not a valid URL');
    else {
      if (!/^https?:\/\//i.test(s.url)) issue('must be an http(s) URL');
      if (found.userinfo) {
        issue(
          'must not carry credentials: use headers with ${VAR} references or CRM_SOURCE_AUTHORIZATION',
        );
      }
    }
  }
  checkPaging(s, ctx);
  checkEnvelope(s, ctx);
}

/** A recordsPath, recordPath or stream the format cannot use is an error, never ignored. */
function checkEnvelope(s: SourceInput, ctx: z.RefinementCtx): void {
  const issue = (path: string, message: string) =>
    ctx.addIssue({ code: 'custom', path: [path], message });
  if (s.recordsPath !== undefined && s.format === 'ndjson')
    issue('recordsPath', RECORDS_PATH_NDJSON);
  if (s.format === 'csv') {
    for (const key of ['recordPath', 'stream'] as const)
      if (s[key] !== undefined) issue(key, `${key} reads JSON records: not with format csv`);
  }
  if (s.stream !== undefined && s.paginate !== undefined) {
    issue('stream', "stream reads Airbyte or Singer output from a file or URL, not an API's pages");
  }
}

/** Why `recordsPath` does not apply to NDJSON, and what to write instead. */
export const RECORDS_PATH_NDJSON =
  'recordsPath selects the records array of a JSON document; in NDJSON each line is a record: write recordPath to take the record from a key of each line (e.g. recordPath: data)';

// Header names that carry credentials: their values must come from the environment.
const SECRET_HEADER =
  /^(authorization|proxy-authorization|cookie)$|token|key|secret|auth|password|session/i;

/**
 * What a job file's source must meet besides: a credential is referenced
 * (`${NAME}`), never written out, in a header or the URL's query; headers
 * need a URL. Runs even when a field failed, so that every problem is
 * reported at once.
 */
export function checkJobFileSource(s: unknown, ctx: z.RefinementCtx): void {
  if (!isInput(s)) return;
  if (s.headers !== undefined && s.url === undefined) {
    ctx.addIssue({ code: 'custom', path: ['headers'], message: 'headers need a url source' });
  }
  const headers = s.headers && typeof s.headers === 'object' ? s.headers : {};
  for (const [name, value] of Object.entries(headers)) {
    if (SECRET_HEADER.test(name) && typeof value === 'string' && !ENV_REF.test(value)) {
      ctx.addIssue({
        code: 'custom',
        path: ['headers', name],
        message:
          'a credential must not be written in a job file: reference an environment variable, e.g. "Bearer ${HUBSPOT_EXPORT_TOKEN}"',
      });
    }
  }
  const found = typeof s.url === 'string' ? urlCredentials(s.url) : null;
  for (const k of found?.params ?? []) {
    ctx.addIssue({
      code: 'custom',
      path: ['url'],
      message: `query parameter ${k} looks like a credential: reference an environment variable`,
    });
  }
}

/**
 * A source: a local path or an http(s) URL, and how to read it. The one
 * schema of it, for `readRows` and (with `checkJobFileSource`) job files.
 * Every problem is reported at once, each with its path.
 */
export const SourceSpecSchema = SourceFields.superRefine(checkSource, { when: () => true });

/** A job file's `source:` (jobs/definition.ts). */
export const JobSourceSchema = SourceSpecSchema.superRefine(checkJobFileSource, {
  when: () => true,
});

export type SourceSpec = z.infer<typeof SourceSpecSchema>;

/** A `${NAME}` reference to an environment variable, read when the source is opened. */
export const ENV_REF = /\$\{[A-Za-z_][A-Za-z0-9_]*\}/;

/**
 * Credentials written out in a source URL: userinfo, or query parameters
 * that look like credentials and are not `${VAR}` references. `null` when the
 * text is not a URL at all (with references standing for values).
 */
export function urlCredentials(url: string): { userinfo: boolean; params: string[] } | null {
  let parsed: URL;
  try {
    parsed = new URL(url.replace(new RegExp(ENV_REF.source, 'g'), 'x'));
  } catch {
    return null;
  }
  const query = url.includes('?') ? url.slice(url.indexOf('?') + 1).split('#')[0]! : '';
  const params = query.split('&').flatMap((pair) => {
    const [name = '', value = ''] = pair.split('=');
    return name && isSecretParam(name) && !ENV_REF.test(decoded(value)) ? [name] : [];
  });
  return { userinfo: parsed.username !== '' || parsed.password !== '', params };
}

function decoded(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

/** A URL as it may be shown: origin and path, no userinfo, query or fragment. */
export function displayUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}${u.search ? '?…' : ''}`;
  } catch {
    return '(invalid URL)';
  }
}

/** The name errors and logs use for a source. */
export function sourceName(spec: Pick<SourceSpec, 'path' | 'url'>): string {
  if (spec.url !== undefined) return displayUrl(spec.url);
  return spec.path ?? '(no source)';
}
