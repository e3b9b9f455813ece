/**
 * Listing. GET /companies answers a DRF page `{count, next, previous,
 * results}`; the API does not say what the other GETs answer
 * (docs/PLATFORM-API.md), so one reader accepts a page (follow `next`), an
 * array (its items) or one object (one item; `{}` is no item, as several
 * records are documented only as empty objects).
 *
 * `next` is followed as given, absolute or relative, but only on the origin
 * of the base URL: the API key is sent with every request, so a `next` on
 * another scheme, host or port is refused before anything is sent. A `next`
 * seen before is a loop and ends the listing with an error.
 */
import { z } from 'zod';
import { CrossOriginError, InvalidResponseError, type RequestContext } from './errors.js';

export type Listing =
  | { kind: 'page'; items: unknown[]; next: string | null; count: number | null }
  | { kind: 'array'; items: unknown[] }
  | { kind: 'single'; items: unknown[] }
  | { kind: 'invalid'; issues: string[] };

const PageEnvelope = z.looseObject({
  count: z.number().int().nonnegative().nullable().optional(),
  next: z.string().nullable().optional(),
  previous: z.string().nullable().optional(),
  results: z.array(z.unknown()),
});

/** Tells a page, an array and a single record apart. Pure. */
export function classifyListing(body: unknown): Listing {
  if (Array.isArray(body)) return { kind: 'array', items: body };
  if (typeof body !== 'object' || body === null) {
    return {
      kind: 'invalid',
      issues: [
        `(root): expected a page, an array or an object, got ${body === null ? 'null' : typeof body}`,
      ],
    };
  }
  if (Array.isArray((body as { results?: unknown }).results) && 'next' in body) {
    const page = PageEnvelope.safeParse(body);
    if (!page.success) return { kind: 'invalid', issues: zodIssues(page.error) };
    return {
      kind: 'page',
      items: page.data.results,
      next: page.data.next ?? null,
      count: page.data.count ?? null,
    };
  }
  return { kind: 'single', items: Object.keys(body).length === 0 ? [] : [body] };
}

/**
 * Resolves a `next` link against the URL of the page that gave it, and
 * refuses it unless it stays on `origin` with no credentials of its own.
 */
export function resolveNext(next: string, current: URL, origin: string, ctx: RequestContext): URL {
  let url: URL;
  try {
    url = new URL(next, current);
  } catch {
    throw new InvalidResponseError(`${ctx.method} ${ctx.route}: next is not a URL`, {
      ...ctx,
      retryable: false,
      mayHaveApplied: false,
      issues: ['next: expected a URL'],
    });
  }
  if (url.origin !== origin || url.username !== '' || url.password !== '') {
    // Name only scheme, host and port: the foreign URL may carry credentials.
    throw new CrossOriginError(
      `${ctx.method} ${ctx.route}: refused a next page on another origin (${url.protocol}//${url.host}); the API key stays on ${origin}`,
      { ...ctx, retryable: false, mayHaveApplied: false },
    );
  }
  return url;
}

/**
 * The next page's URL (`resolveNext`), refused as well when the chain loops
 * back to a page already read (`seen` holds the hrefs read so far).
 */
export function nextPageUrl(
  next: string,
  current: URL,
  origin: string,
  ctx: RequestContext & { path: string },
  seen: ReadonlySet<string>,
): URL {
  const url = resolveNext(next, current, origin, ctx);
  if (seen.has(url.href)) {
    throw new InvalidResponseError(`GET ${ctx.path}: next points back to a page already read`, {
      ...ctx,
      retryable: false,
      mayHaveApplied: false,
      issues: ['next: loops to a page already read'],
    });
  }
  return url;
}

export interface PaginateOptions<T> {
  /** The first URL (already checked to be on `origin`). */
  first: URL;
  origin: string;
  /** The listing's route template, used in errors and logs for every page. */
  route: string;
  /** Fetches one URL and returns its parsed JSON body. */
  fetch: (url: URL) => Promise<unknown>;
  /** Validates one item; throws InvalidResponseError naming the path. */
  parseItem: (item: unknown, path: string, url: URL) => T;
  /** Checks a page envelope before its items are read (e.g. CompanyPage). */
  checkPage?: (body: unknown, url: URL) => void;
}

/** Yields every item of a page chain, an array, or a single record. */
export async function* paginate<T>(opts: PaginateOptions<T>): AsyncGenerator<T, void, undefined> {
  const seen = new Set<string>();
  let url: URL | null = opts.first;
  while (url) {
    seen.add(url.href);
    const body = await opts.fetch(url);
    const ctx = { method: 'GET', route: opts.route, path: url.pathname + url.search };
    const listing = classifyListing(body);
    if (listing.kind === 'invalid') {
      throw new InvalidResponseError(
        `GET ${ctx.path}: invalid listing: ${listing.issues.join('; ')}`,
        {
          ...ctx,
          retryable: false,
          mayHaveApplied: false,
          issues: listing.issues,
        },
      );
    }
    if (listing.kind === 'page') opts.checkPage?.(body, url);
    const prefix = listing.kind === 'page' ? 'results.' : listing.kind === 'array' ? '' : null;
    for (let i = 0; i < listing.items.length; i++) {
      yield opts.parseItem(listing.items[i], prefix === null ? '' : `${prefix}${i}`, url);
    }
    if (listing.kind !== 'page' || !listing.next) return;
    url = nextPageUrl(listing.next, url, opts.origin, ctx, seen);
  }
}

/** Zod issues as `path: message`, the path dotted (`results.3.id`), `(root)` for the top. */
export function zodIssues(error: z.ZodError, prefix = ''): string[] {
  return error.issues.map((issue) => {
    const path = [prefix, ...issue.path.map(String)].filter((p) => p !== '').join('.');
    return `${path || '(root)'}: ${issue.message}`;
  });
}
