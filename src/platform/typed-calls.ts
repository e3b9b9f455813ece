/**
 * A platform call checked against its schemas: the request body against its
 * `…Request` schema before sending (InvalidRequestError), the response
 * against its schema after (unknown fields kept, a wrong type is an
 * InvalidResponseError naming the field), a listing's items one by one.
 * client.ts names the operations; this is how each one is sent.
 */
import type { z } from 'zod';
import { InvalidRequestError, InvalidResponseError } from './errors.js';
import type { PlatformHttp } from './http.js';
import { nextPageUrl, paginate, zodIssues } from './pages.js';

/** Every method takes these; `signal` aborts the request (AbortedError). */
export interface CallOptions {
  signal?: AbortSignal | undefined;
}

/** Options of a listing that follows pages itself (an array or one record is one "page"). */
export interface ListOptions extends CallOptions {
  /**
   * Runs each page's GET: a caller wraps it to retry or pace it, so that a
   * fault costs that page again, not the whole listing from its first page.
   */
  eachPage?: <R>(get: () => Promise<R>) => Promise<R>;
}

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'OPTIONS';
export type Id = string | number;

export interface Call<T> {
  method: Method;
  /** The route; a `{id}` in it stands for `id`. */
  route: string;
  id?: Id;
  /** A full URL instead (a page link), already checked to be on the base origin. */
  url?: URL;
  response: z.ZodType<T>;
  request?: z.ZodType;
  body?: unknown;
  signal?: AbortSignal | undefined;
}

const idPath = (route: string, id: Id) => route.replace('{id}', encodeURIComponent(String(id)));

export class TypedCalls {
  constructor(private readonly http: PlatformHttp) {}

  private get origin(): string {
    return this.http.origin;
  }

  async call<T>(c: Call<T>): Promise<T> {
    const url = c.url ?? this.http.url(c.id === undefined ? c.route : idPath(c.route, c.id));
    // What an error names of the call: built only for one (most calls succeed).
    const ctx = () => ({ method: c.method, route: c.route, path: url.pathname + url.search });
    let body = c.body;
    if (c.request) {
      const checked = c.request.safeParse(c.body);
      if (!checked.success) {
        const at = ctx();
        const issues = zodIssues(checked.error);
        throw new InvalidRequestError(
          `${at.method} ${at.path}: invalid request body: ${issues.join('; ')}`,
          {
            ...at,
            retryable: false,
            mayHaveApplied: false,
            issues,
          },
        );
      }
      body = checked.data;
    }
    const res = await this.http.send({
      method: c.method,
      route: c.route,
      url,
      body,
      signal: c.signal,
    });
    return this.parse(c.response, res.body, '', () => ({ ...ctx(), statusCode: res.status }));
  }

  list<T>(route: string, item: z.ZodType<T>, o: ListOptions): AsyncGenerator<T, void, undefined> {
    return paginate({
      first: this.http.url(route),
      origin: this.origin,
      route,
      fetch: async (url) => {
        const get = async (): Promise<unknown> =>
          (await this.http.send({ method: 'GET', route, url, signal: o.signal })).body;
        return o.eachPage ? o.eachPage(get) : get();
      },
      parseItem: (value, path, url) =>
        this.parse(item, value, path, () => ({
          method: 'GET',
          route,
          path: url.pathname + url.search,
        })),
    });
  }

  /** Every page of a paged GET, following `next` on the same origin; a loop is an error. */
  async *pages<P extends { next: string | null }>(
    route: string,
    schema: z.ZodType<P>,
    o: ListOptions,
  ): AsyncGenerator<P, void, undefined> {
    const seen = new Set<string>();
    let url = this.http.url(route);
    while (true) {
      seen.add(url.href);
      const at = url;
      const get = (): Promise<P> =>
        this.call({ method: 'GET', route, url: at, response: schema, signal: o.signal });
      const page = await (o.eachPage ? o.eachPage(get) : get());
      yield page;
      if (!page.next) return;
      const ctx = { method: 'GET', route, path: url.pathname + url.search };
      url = nextPageUrl(page.next, url, this.origin, ctx, seen);
    }
  }

  private parse<T>(
    schema: z.ZodType<T>,
    value: unknown,
    at: string,
    context: () => { method: string; route: string; path: string; statusCode?: number },
  ): T {
    const parsed = schema.safeParse(value);
    if (parsed.success) return parsed.data;
    const ctx = context();
    const issues = zodIssues(parsed.error, at);
    throw new InvalidResponseError(
      `${ctx.method} ${ctx.path}: unexpected response: ${issues.slice(0, 5).join('; ')}`,
      {
        ...ctx,
        retryable: false,
        // A write answered 2xx went through, whatever its body says.
        mayHaveApplied: ctx.method !== 'GET' && ctx.method !== 'OPTIONS',
        issues,
      },
    );
  }
}
