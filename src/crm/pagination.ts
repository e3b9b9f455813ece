/**
 * How a CRM's list API hands out its records a page at a time, as data: the
 * job file's `paginate` option. Pure: no I/O here (the reader that fetches
 * the pages is `pages.ts`).
 *
 * Four ways, each read from the page's JSON body with dotted paths (the same
 * form as `recordsPath`; a key that itself holds a dot, like Dataverse's
 * `@odata.nextLink`, is taken whole when the object has it):
 *
 * - `next`: the body gives the next page's URL (absolute, or relative to the
 *   page that gave it, as Salesforce's `nextRecordsUrl` is).
 * - `cursor` + `param`: the body gives a cursor, sent back in the query
 *   parameter `param` of the first URL (its other parameters kept as written).
 * - `hasMore` + `offsetParam`: while the flag is true, the first URL again
 *   with `offsetParam` = the records read so far.
 * - `hasMore` + `pageParam`: while the flag is true, the first URL again with
 *   `pageParam` = the next page number.
 * - `totalPages` + `pageParam`: the body gives the number of pages; the next
 *   page number until that one has been read.
 * - `untilEmpty` + `pageParam` or `offsetParam`: page numbers or offsets
 *   until a page comes back with no records (an API that says nothing else).
 *
 * `done`, with `next` or `cursor`, ends the pull when that value is true.
 * `method: POST` with a JSON `body` asks for each page by POST (a search
 * endpoint): the cursor, offset or page number is then written into the
 * body at `param` / `offsetParam` / `pageParam` (a dotted path), on the same
 * URL. Presets name the same rules for known CRMs, with their records path.
 */
import { z } from 'zod';
import { SourceError } from './source-error.js';

/** Dotted path into a page body; a key holding a dot is matched whole where it exists. */
const PagePath = z
  .string()
  .regex(
    /^[^.]+(\.[^.]+)*$/,
    'must be a dotted path such as "paging.next.after" or "@odata.nextLink"',
  );

const QueryParam = z
  .string()
  .regex(/^[^&=#?\s]+$/, 'must be a query parameter name such as "after" or "_skip"');

/** A JSON object, as a POST body. */
export type JsonBody = Record<string, unknown>;

/**
 * How offsets and page numbers end: a flag (`hasMore`), a page count
 * (`totalPages`, page numbers only) or the first page with no records.
 */
type Stop = { hasMore: string } | { totalPages: string } | { untilEmpty: true };

/** `post`: each page is asked for by POST with this body, the position written into it. */
type Request = { post?: JsonBody; recordsPath?: string };

export type PageRules =
  | ({ kind: 'next'; next: string; done?: string } & { recordsPath?: string })
  | ({ kind: 'cursor'; cursor: string; param: string; done?: string } & Request)
  | ({ kind: 'offset'; param: string } & Exclude<Stop, { totalPages: string }> & Request)
  | ({ kind: 'page'; param: string } & Stop & Request);

/**
 * Known list APIs. HubSpot's `paging.next.link` is not followed: the cursor
 * `paging.next.after` is sent back on the first URL instead, so the
 * parameters written there (`properties`, `limit`) hold on every page.
 */
export const PAGINATION_PRESETS = {
  /** HubSpot CRM v3 lists: `{results, paging: {next: {after, link}}}`. */
  hubspot: { kind: 'cursor', cursor: 'paging.next.after', param: 'after', recordsPath: 'results' },
  /** Salesforce REST query: `{totalSize, done, nextRecordsUrl, records}`. */
  salesforce: { kind: 'next', next: 'nextRecordsUrl', done: 'done', recordsPath: 'records' },
  /** Pipedrive v1 lists: `{data, additional_data: {pagination: {next_start}}}`. */
  pipedrive: {
    kind: 'cursor',
    cursor: 'additional_data.pagination.next_start',
    param: 'start',
    recordsPath: 'data',
  },
  /** Close lists: `{data, has_more}` with `_skip` (and `_limit` in the URL). */
  close: { kind: 'offset', hasMore: 'has_more', param: '_skip', recordsPath: 'data' },
  /** Microsoft Dataverse Web API: `{value, "@odata.nextLink"}`. */
  dataverse: { kind: 'next', next: '@odata.nextLink', recordsPath: 'value' },
  /**
   * Freshsales lists and views: `{<object>: [...], meta: {total_pages, total}}`
   * with `?page=`; the records' key is the object's (`sales_accounts`,
   * `contacts`): give it as recordsPath.
   */
  freshsales: { kind: 'page', totalPages: 'meta.total_pages', param: 'page' },
  /**
   * Copper searches: `POST …/search` with `{page_number, page_size}`, answered
   * by a bare array; the last page is the first one with nothing.
   */
  copper: { kind: 'page', untilEmpty: true, param: 'page_number', post: { page_size: 200 } },
} as const satisfies Record<string, PageRules>;

export type PaginationPreset = keyof typeof PAGINATION_PRESETS;
const PRESET_NAMES = Object.keys(PAGINATION_PRESETS) as [PaginationPreset, ...PaginationPreset[]];

const PaginateOptions = z
  .strictObject({
    next: PagePath.optional(),
    cursor: PagePath.optional(),
    param: QueryParam.optional(),
    hasMore: PagePath.optional(),
    totalPages: PagePath.optional(),
    untilEmpty: z.literal(true).optional(),
    offsetParam: QueryParam.optional(),
    pageParam: QueryParam.optional(),
    done: PagePath.optional(),
    method: z.enum(['GET', 'POST']).optional(),
    body: z.record(z.string(), z.unknown()).optional(),
  })
  .superRefine((p, ctx) => {
    const stops = [p.hasMore, p.totalPages, p.untilEmpty].filter((w) => w !== undefined);
    const ways = [p.next, p.cursor].filter((w) => w !== undefined).length + stops.length;
    const issue = (message: string, path: string[] = []) =>
      ctx.addIssue({ code: 'custom', message, path });
    const stop =
      p.hasMore !== undefined
        ? 'hasMore'
        : p.totalPages !== undefined
          ? 'totalPages'
          : 'untilEmpty';
    const post = p.method === 'POST';
    if (ways !== 1) issue('give exactly one of next, cursor, hasMore, totalPages or untilEmpty');
    if ((p.cursor !== undefined) !== (p.param !== undefined))
      issue(
        post
          ? 'cursor and param go together: param names the key of the body the cursor is written to'
          : 'cursor and param go together: param names the query parameter the cursor is sent in',
      );
    if (stops.length > 0 && (p.offsetParam === undefined) === (p.pageParam === undefined))
      issue(`${stop} needs exactly one of offsetParam or pageParam`);
    if (p.totalPages !== undefined && p.offsetParam !== undefined)
      issue('totalPages counts pages: it goes with pageParam, not offsetParam');
    if (stops.length === 0 && (p.offsetParam ?? p.pageParam) !== undefined)
      issue('offsetParam and pageParam go with hasMore, totalPages or untilEmpty');
    if (p.done !== undefined && stops.length > 0)
      issue(`done goes with next or cursor; ${stop} ends offset and page paging`);
    if (p.body !== undefined && !post)
      issue('body goes with method: POST (a GET sends no body)', ['body']);
    if (post && p.next !== undefined)
      issue(
        'next follows the link a page gives, by GET: method POST goes with cursor, hasMore, totalPages or untilEmpty',
        ['method'],
      );
    for (const key of credentialKeys(p.body))
      issue(
        `${key} looks like a credential: the body is written out as it is; send credentials in a header with a \${VAR} reference`,
        ['body'],
      );
    if (post) {
      // The position is written into the body: each key a dotted path.
      for (const key of ['param', 'offsetParam', 'pageParam'] as const) {
        const v = p[key];
        if (v !== undefined && !PagePath.safeParse(v).success)
          issue('must be a dotted path into the body such as "page_number" or "paging.after"', [
            key,
          ]);
      }
    }
  });

// Keys of a POST body that hold credentials in practice; the body is sent as written, never expanded.
const SECRET_KEY = /token|secret|password|passwd|api_?key|access_?key|auth|session|credential/i;

/** Dotted paths of the body's keys (nested objects included) that look like credentials. */
function credentialKeys(body: unknown, at = ''): string[] {
  if (!isObject(body)) return [];
  return Object.entries(body).flatMap(([k, v]) => {
    const path = at === '' ? k : `${at}.${k}`;
    return SECRET_KEY.test(k) ? [path] : credentialKeys(v, path);
  });
}

const PRESET_OR_RULES = `a preset (${PRESET_NAMES.join(', ')}) or an object with next, cursor, hasMore, totalPages or untilEmpty`;
const PresetName = z.enum(PRESET_NAMES, { error: PRESET_OR_RULES });

/**
 * `paginate:` in a job file: a preset name or the rules written out. Told
 * apart by type, so that a problem is reported in the form that was meant
 * (a union would only say "invalid input").
 */
export const PaginateSpec = z
  .unknown()
  .transform((value, ctx): PaginationPreset | z.output<typeof PaginateOptions> => {
    const schema =
      typeof value === 'string'
        ? PresetName
        : value !== null && typeof value === 'object' && !Array.isArray(value)
          ? PaginateOptions
          : undefined;
    const parsed = schema?.safeParse(value);
    if (parsed?.success) return parsed.data;
    for (const issue of parsed?.error.issues ?? [{ message: PRESET_OR_RULES, path: [] }]) {
      ctx.addIssue({ code: 'custom', message: issue.message, path: issue.path });
    }
    return z.NEVER;
  });
export type PaginateSpec = z.infer<typeof PaginateSpec>;

/**
 * `retry:` of a paginated source: how a page that failed is tried again
 * (defaults: RETRY_DEFAULTS.page in src/config.ts; the decision: the retry policy).
 */
export const PageRetrySpec = z.strictObject({
  /** Tries of one page in all, the first included. */
  attempts: z.number().int().min(1).max(50).optional(),
  /** First wait; doubled after each failure (times a random factor in [1, 2)). */
  minDelayMs: z.number().int().min(0).optional(),
  /** Longest wait, a server's `Retry-After` included. */
  maxDelayMs: z.number().int().min(0).optional(),
});
export type PageRetrySpec = z.infer<typeof PageRetrySpec>;

/** The rules a `paginate` option stands for; `recordsPath` given in the source wins. */
export function pageRules(spec: PaginateSpec, recordsPath?: string): PageRules {
  const rules: PageRules =
    typeof spec === 'string' ? { ...PAGINATION_PRESETS[spec] } : written(spec);
  if (recordsPath !== undefined) rules.recordsPath = recordsPath;
  return rules;
}

function written(spec: Exclude<PaginateSpec, string>): PageRules {
  if (spec.next !== undefined)
    return { kind: 'next', next: spec.next, ...(spec.done !== undefined && { done: spec.done }) };
  const post = spec.method === 'POST' ? { post: spec.body ?? {} } : {};
  if (spec.cursor !== undefined)
    return {
      kind: 'cursor',
      cursor: spec.cursor,
      param: spec.param ?? '',
      ...(spec.done !== undefined && { done: spec.done }),
      ...post,
    };
  const stop: Stop =
    spec.hasMore !== undefined
      ? { hasMore: spec.hasMore }
      : spec.totalPages !== undefined
        ? { totalPages: spec.totalPages }
        : { untilEmpty: true };
  if (spec.offsetParam !== undefined && !('totalPages' in stop))
    return { kind: 'offset', ...stop, param: spec.offsetParam, ...post };
  return { kind: 'page', ...stop, param: spec.pageParam ?? '', ...post };
}

/** Source-level checks of `paginate` and `retry`, shared by the job file and readRows. */
export function checkPaging(
  s: { url?: unknown; format?: unknown; paginate?: unknown; retry?: unknown },
  ctx: z.RefinementCtx,
): void {
  const issue = (path: string, message: string) =>
    ctx.addIssue({ code: 'custom', path: [path], message });
  if (s.paginate !== undefined && s.url === undefined) issue('paginate', 'paginate needs a url');
  if (s.paginate !== undefined && s.format !== undefined && s.format !== 'json')
    issue('format', 'a paginated source reads JSON pages: leave format out or set json');
  if (s.retry !== undefined && s.paginate === undefined)
    issue('retry', 'retry applies to paginated sources (each page is tried again on its own)');
}

/** The value at a dotted path; the whole path is tried as one key first. */
export function valueAt(body: unknown, path: string): unknown {
  if (isObject(body) && Object.hasOwn(body, path)) return body[path];
  let at: unknown = body;
  for (const key of path.split('.')) {
    if (!isObject(at) || !Object.hasOwn(at, key)) return undefined;
    at = at[key];
  }
  return at;
}

/** Where records are looked for in a page when neither preset nor recordsPath says. */
export const PAGE_RECORD_KEYS: readonly string[] = ['results', 'records', 'data', 'items', 'value'];

/** Where a page's error is reported: the source's display name and the page number. */
export interface PageAt {
  source: string;
  page: number;
}

export function pageError(at: PageAt, detail: string): SourceError {
  return new SourceError('source.pagination', `page ${at.page}: ${detail}`, { source: at.source });
}

/** The records of one page body. A `null` list is an empty page (Pipedrive's when none). */
export function pageRecords(body: unknown, rules: PageRules, at: PageAt): unknown[] {
  if (rules.recordsPath !== undefined) {
    const list = valueAt(body, rules.recordsPath);
    if (Array.isArray(list)) return list;
    if (list === null) return [];
    const got = list === undefined ? 'nothing' : describe(list);
    throw pageError(at, `expected the records array at "${rules.recordsPath}", found ${got}`);
  }
  if (Array.isArray(body)) return body;
  for (const key of PAGE_RECORD_KEYS) {
    const list = valueAt(body, key);
    if (Array.isArray(list)) return list;
  }
  throw pageError(
    at,
    `no records array under ${PAGE_RECORD_KEYS.join(', ')} (set recordsPath), found ${describe(body)}`,
  );
}

/** What the reader knows after reading a page, for working out the next one. */
export interface PageState extends PageAt {
  /** The URL of the page just read. */
  url: URL;
  /** The pull's first URL. */
  first: URL;
  /** Records on this page. */
  pageRecords: number;
  /** Records read so far, this page included. */
  records: number;
}

/** One request for a page: its URL, and for a POST its JSON body. */
export interface PageRequest {
  url: URL;
  body?: JsonBody;
}

/** The first page's request: the source URL, with the rules' body when pages are asked for by POST. */
export function firstRequest(first: URL, rules: PageRules): PageRequest {
  return rules.kind !== 'next' && rules.post !== undefined
    ? { url: first, body: rules.post }
    : { url: first };
}

/**
 * The next page's request, or null when this page was the last. A GET sets
 * the cursor, offset or page number as a query parameter of the first URL; a
 * POST writes it into the first body, on the first URL. Checks no origin
 * (see `checkNext`).
 */
export function nextRequest(body: unknown, rules: PageRules, state: PageState): PageRequest | null {
  if (rules.kind === 'next' || rules.post === undefined) {
    const url = nextPage(body, rules, state);
    return url === null ? null : { url };
  }
  const at = position(body, rules, state);
  if (at === null || at instanceof URL) return at === null ? null : { url: at };
  return { url: state.first, body: withKey(rules.post, rules.param, at) };
}

/** The next page's URL for a GET, or null when this page was the last. Checks no origin (see `checkNext`). */
export function nextPage(body: unknown, rules: PageRules, state: PageState): URL | null {
  const at = position(body, rules, state);
  if (at === null || at instanceof URL) return at;
  return withParam(state.first, rules.kind === 'next' ? '' : rules.param, String(at));
}

/** Where the next page is: a URL to follow, or the cursor, offset or page number to set; null after the last. */
function position(body: unknown, rules: PageRules, state: PageState): URL | string | number | null {
  if (rules.kind === 'next' || rules.kind === 'cursor') {
    if (rules.done !== undefined && valueAt(body, rules.done) === true) return null;
    const path = rules.kind === 'next' ? rules.next : rules.cursor;
    const value = valueAt(body, path);
    if (value === undefined || value === null || value === '' || value === false) return null;
    if (rules.kind === 'next') {
      if (typeof value !== 'string')
        throw pageError(state, `the next page at "${path}" is ${describe(value)}, not a URL`);
      try {
        return new URL(value, state.url);
      } catch {
        throw pageError(state, `the next page at "${path}" is not a URL`);
      }
    }
    if (typeof value !== 'string' && typeof value !== 'number')
      throw pageError(state, `the cursor at "${path}" is ${describe(value)}`);
    return value;
  }
  if ('untilEmpty' in rules) {
    if (state.pageRecords === 0) return null;
  } else if ('totalPages' in rules) {
    const total = valueAt(body, rules.totalPages);
    if (typeof total !== 'number' || !Number.isSafeInteger(total))
      throw pageError(
        state,
        `the page count at "${rules.totalPages}" is ${total === undefined ? 'missing' : describe(total)}, not a whole number`,
      );
    // Page numbers count from the first request's own; `total` is the number of the last page.
    if (startOf(rules, state) + state.page > total) return null;
  } else {
    if (valueAt(body, rules.hasMore) !== true) return null;
    if (state.pageRecords === 0) {
      // Asking again would give the same empty page for ever.
      throw pageError(
        state,
        `"${rules.hasMore}" says there are more records, but the page had none`,
      );
    }
  }
  const start = startOf(rules, state);
  return rules.kind === 'offset' ? start + state.records : start + state.page;
}

/** The offset or page number of the first request: its parameter, else 0 (offsets) or 1 (pages). */
function startOf(rules: Extract<PageRules, { kind: 'offset' | 'page' }>, state: PageState): number {
  const given =
    rules.post !== undefined ? valueAt(rules.post, rules.param) : paramOf(state.first, rules.param);
  const start = Number(given ?? (rules.kind === 'page' ? 1 : 0));
  if (!Number.isSafeInteger(start)) {
    const where = rules.post !== undefined ? 'first body' : 'first URL';
    throw pageError(state, `the ${where}'s ${rules.param} is not a whole number`);
  }
  return start;
}

/** `body` with `value` at the dotted `path` (objects made on the way); a copy, the rest kept. */
export function withKey(body: JsonBody, path: string, value: unknown): JsonBody {
  const [key, ...rest] = path.split('.');
  const inner = body[key!];
  return {
    ...body,
    [key!]:
      rest.length === 0 ? value : withKey(isObject(inner) ? inner : {}, rest.join('.'), value),
  };
}

/**
 * Refuses a next page that leaves the source's origin (the source's headers,
 * credentials among them, are for that origin alone, and nothing is sent
 * elsewhere, with or without them) or that was read before (a loop; `key`
 * names a request, `requestKey`). Errors name only the foreign scheme, host
 * and port, never a query.
 */
export function checkNext(
  url: URL,
  origin: string,
  seen: ReadonlySet<string>,
  at: PageAt,
  key: string = url.href,
): void {
  if (url.origin !== origin || url.username !== '' || url.password !== '') {
    throw pageError(
      at,
      `refused the next page on another origin (${url.protocol}//${url.host}): the source's headers are for ${origin} only`,
    );
  }
  if (seen.has(key)) throw pageError(at, 'the next page points back to a page already read');
}

/** What tells two page requests apart: the URL, and the body of a POST. */
export function requestKey(req: PageRequest): string {
  return req.body === undefined ? req.url.href : `${req.url.href} ${JSON.stringify(req.body)}`;
}

/** `url` with the query parameter `name` set to `value`; every other parameter kept as written. */
export function withParam(url: URL, name: string, value: string): URL {
  const pair = `${encodeURIComponent(name)}=${encodeURIComponent(value)}`;
  const pairs = url.search.length > 1 ? url.search.slice(1).split('&') : [];
  let set = false;
  const out: string[] = [];
  for (const p of pairs) {
    if (decodedName(p) !== name) out.push(p);
    else if (!set) {
      out.push(pair);
      set = true;
    }
  }
  if (!set) out.push(pair);
  const next = new URL(url.href);
  next.search = `?${out.join('&')}`;
  return next;
}

function paramOf(url: URL, name: string): string | undefined {
  return url.searchParams.get(name) ?? undefined;
}

function decodedName(pair: string): string {
  const raw = pair.split('=')[0] ?? '';
  try {
    return decodeURIComponent(raw.replace(/\+/g, ' '));
  } catch {
    return raw;
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'object') return 'an object';
  return `a ${typeof v}`;
}
