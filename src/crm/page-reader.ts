/**
 * A paginated URL source (`paginate` in the job file): the pages of a CRM's
 * list API read one after the other, each fetched whole and parsed before
 * its records are handed on, so a page that fails is simply fetched again and
 * no record is read twice. Memory holds one page and one batch.
 *
 * Rows carry the record's number in the pull as their `line` (1 = the first
 * record of the first page), since an API answer has no lines of its own.
 *
 * Pages are asked for by GET, or by POST with a JSON body where `paginate`
 * says so (a search endpoint: the position is written into the body).
 *
 * A 429 (after its `Retry-After`, seconds or an HTTP date), a 408, a 5xx, a
 * dropped connection, a timeout or a body cut short is tried again with
 * backoff (`retry`: attempts, minDelayMs, maxDelayMs); any other status, or a
 * page still failing after the last attempt, ends the read with a
 * SourceError naming the page and the status. Redirects are not followed and
 * a next page is only fetched on the source's origin (`checkNext`): the
 * source's headers, credentials among them, go nowhere else. URLs are shown
 * without their query.
 */
import got, { RequestError, TimeoutError } from 'got';
import { RETRY_DEFAULTS } from '../config.js';
import { silentLogger, type Logger } from '../log.js';
import { parseRetryAfter } from '../platform/retry-after.js';
import { retrying } from '../platform/with-retry.js';
import {
  decide,
  type PageFault as PolicyPageFault,
  type PageRetry,
} from '../platform/retry-policy.js';
import type { Envelope } from './envelope.js';
import { parseJson } from './json-value.js';
import {
  checkNext,
  firstRequest,
  nextRequest,
  pageError,
  pageRecords,
  pageRules,
  requestKey,
  type PageAt,
  type PageRequest,
  type PageState,
} from './pagination.js';
import type { SourceRow } from './row.js';
import { SourceError, type SourceErrorCode } from './source-error.js';
import { DEFAULT_TIMEOUT_MS, NO_ENV, requestHeaders, sourceUrl, type SourceEnv } from './source.js';
import { sourceName, type SourceSpec } from './source-spec.js';

export interface PagesOptions {
  signal?: AbortSignal;
  /** Where CRM_SOURCE_AUTHORIZATION and `${NAME}` references are read; none when not given. */
  env?: SourceEnv;
  logger?: Logger;
  batchSize: number;
  /** Where each record of a page is (`recordPath`); the page's item is the record when none. */
  envelope?: Envelope;
}

/** Largest page body: a page is held whole while it is parsed. */
export const MAX_PAGE_BYTES = 128 * 1024 * 1024;

/** One failed try of a page; `retryable` says whether another may help (the retry policy reads it). */
class PageFault extends Error implements PolicyPageFault {
  readonly kind = 'page-fault';
  readonly retryAfterMs: number | null;
  constructor(
    readonly code: SourceErrorCode,
    readonly detail: string,
    readonly retryable: boolean,
    readonly extra: { statusCode?: number; retryAfterMs?: number | null } = {},
  ) {
    super(detail);
    this.retryAfterMs = extra.retryAfterMs ?? null;
  }
}

/** Streams the records of every page as batches of rows. Faults throw SourceError. */
export async function* readPages(
  spec: SourceSpec,
  opts: PagesOptions,
): AsyncGenerator<SourceRow[], void, undefined> {
  const name = sourceName(spec);
  const logger = opts.logger ?? silentLogger;
  const env = opts.env ?? NO_ENV;
  const first = sourceUrl(spec, env);
  const headers = requestHeaders(spec, env);
  const rules = pageRules(spec.paginate!, spec.recordsPath);
  const fetchOpts: FetchOptions = {
    headers,
    timeoutMs: spec.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    retry: { ...RETRY_DEFAULTS.page, ...spec.retry },
    logger,
    ...(opts.signal && { signal: opts.signal }),
  };
  const seen = new Set<string>();
  let req: PageRequest | null = firstRequest(first, rules);
  let page = 0;
  let records = 0;
  let out: SourceRow[] = [];
  // Offsets and page numbers: a page with the records of the one before means
  // the API does not read the parameter, and the pull would never end.
  let previous: string | undefined;
  while (req !== null) {
    page++;
    seen.add(requestKey(req));
    const at: PageAt = { source: name, page };
    const body = await fetchPage(req, at, fetchOpts);
    const list = body === undefined ? [] : pageRecords(body, rules, at);
    if ((rules.kind === 'offset' || rules.kind === 'page') && list.length > 0) {
      const text = JSON.stringify(list);
      if (text === previous)
        throw pageError(
          at,
          `the page repeats the records of page ${page - 1}: does the API read "${rules.param}"?`,
        );
      previous = text;
    }
    for (const item of list) {
      const row = rowOf(++records, item);
      const opened =
        opts.envelope && 'record' in row ? opts.envelope.open(row.line, row.record) : row;
      if (opened !== undefined) out.push(opened);
    }
    const state: PageState = { ...at, url: req.url, first, pageRecords: list.length, records };
    const next: PageRequest | null = body === undefined ? null : nextRequest(body, rules, state);
    if (next !== null) checkNext(next.url, first.origin, seen, at, requestKey(next));
    req = next;
    while (out.length >= opts.batchSize) {
      yield out.slice(0, opts.batchSize);
      out = out.slice(opts.batchSize);
    }
  }
  if (out.length > 0) yield out;
  logger.debug({ source: name, pages: page, rows: records }, 'pages read');
}

/** A record of a page as a row; anything but an object is a problem row, worded as in JSON files. */
function rowOf(line: number, item: unknown): SourceRow {
  if (item !== null && typeof item === 'object' && !Array.isArray(item)) {
    return { line, record: item as Record<string, unknown> };
  }
  const kind = item === null ? 'null' : Array.isArray(item) ? 'an array' : `a ${typeof item}`;
  return { line, problem: `not a JSON object (${kind})` };
}

interface FetchOptions {
  headers: Record<string, string>;
  timeoutMs: number;
  retry: PageRetry;
  logger: Logger;
  signal?: AbortSignal;
}

/**
 * The parsed body of one page (undefined for a 204), tried again while the
 * retry policy says so (`read-page`: the server's wait first, then the backoff).
 */
async function fetchPage(req: PageRequest, at: PageAt, opts: FetchOptions): Promise<unknown> {
  let tries = 0;
  try {
    return await retrying(
      async (attempt) => {
        tries = attempt;
        return await fetchOnce(req, opts);
      },
      (err, attempt) =>
        decide(err, { operation: 'read-page', attempt, page: opts.retry }, RETRY_DEFAULTS),
      {
        ...(opts.signal && { signal: opts.signal }),
        onRetry: (err, attempt, d) =>
          opts.logger.warn(
            { source: at.source, page: at.page, attempt, waitMs: d.delayMs },
            `page ${at.page}: ${(err as PageFault).detail}; trying again`,
          ),
      },
    );
  } catch (err) {
    if (opts.signal?.aborted) throw opts.signal.reason;
    if (!(err instanceof PageFault)) throw err;
    const after = tries > 1 ? `; gave up after ${tries} attempts` : '';
    throw new SourceError(err.code, `page ${at.page}: ${err.detail}${after}`, {
      source: at.source,
      retryable: err.retryable,
      ...(err.extra.statusCode !== undefined && { statusCode: err.extra.statusCode }),
    });
  }
}

async function fetchOnce(req: PageRequest, opts: FetchOptions): Promise<unknown> {
  const t = opts.timeoutMs;
  const method = req.body === undefined ? 'GET' : 'POST';
  let tooLarge = false;
  const request = got(req.url, {
    method,
    ...(req.body !== undefined && { json: req.body }),
    headers: opts.headers,
    retry: { limit: 0 },
    throwHttpErrors: false,
    // A redirect could take the headers elsewhere.
    followRedirect: false,
    responseType: 'buffer',
    // `socket` is the idle timeout: a page stalled mid-body fails.
    timeout: { lookup: t, connect: t, secureConnect: t, send: t, response: t, socket: t },
    ...(opts.signal && { signal: opts.signal }),
  });
  request.on('downloadProgress', (p) => {
    if (p.transferred > MAX_PAGE_BYTES && !tooLarge) {
      tooLarge = true;
      request.cancel();
    }
  });
  let res;
  try {
    res = await request;
  } catch (err) {
    if (opts.signal?.aborted) throw opts.signal.reason;
    if (tooLarge) {
      throw new PageFault('source.pagination', `larger than ${MAX_PAGE_BYTES} bytes`, false);
    }
    if (err instanceof TimeoutError) {
      throw new PageFault('source.timeout', `no answer within ${t} ms (${err.event})`, true);
    }
    // got's message may quote the URL; only the code is kept.
    const code = err instanceof RequestError ? err.code : String(err);
    throw new PageFault('source.unreachable', `connection failed (${code})`, true);
  }
  const status = res.statusCode;
  if (status === 204) return undefined;
  if (status < 200 || status >= 300) {
    const text = res.statusMessage ? ` ${res.statusMessage}` : '';
    const redirect = status >= 300 && status < 400;
    const retryable = status === 408 || status === 429 || status >= 500;
    const detail = redirect
      ? `${method} answered HTTP ${status}${text}, a redirect (not followed: the source's headers stay on its origin)`
      : `${method} answered HTTP ${status}${text}`;
    throw new PageFault('source.http-status', detail, retryable, {
      statusCode: status,
      retryAfterMs: retryable
        ? (parseRetryAfter(res.headers['retry-after'], Date.now()) ?? null)
        : null,
    });
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(res.body);
  } catch {
    throw new PageFault('source.encoding', 'the page is not valid UTF-8', false);
  }
  if (!/\S/.test(text)) {
    throw new PageFault('source.json', 'empty answer (HTTP 200 with no body)', true);
  }
  try {
    return parseJson(text);
  } catch (err) {
    // A body cut short by a proxy or a dropped connection; the next try may be whole.
    const msg = err instanceof Error ? err.message.slice(0, 120) : String(err);
    throw new PageFault('source.json', `the page is not valid JSON (cut short?): ${msg}`, true);
  }
}
