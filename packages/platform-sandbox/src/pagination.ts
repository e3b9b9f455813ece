/**
 * DRF's PageNumberPagination: `?page=N` (or `last`), an optional `page_size`
 * capped at `maxPageSize`, absolute `next`/`previous` links built from the
 * request's own URL, and 404 "Invalid page." for a page that does not exist.
 */
import { ApiError } from './errors.js';

export interface Page<T> {
  count: number;
  next: string | null;
  previous: string | null;
  results: T[];
}

export interface PageRequest {
  /** The request's absolute URL without query, e.g. http://127.0.0.1:4010/companies */
  base: string;
  query: URLSearchParams;
  pageSize: number;
  maxPageSize: number;
}

const POSITIVE = /^\s*\+?\d+\s*$/;

function pageSizeOf(req: PageRequest): number {
  const raw = req.query.get('page_size');
  // DRF falls back to the default on anything but a positive integer.
  if (raw === null || !POSITIVE.test(raw)) return req.pageSize;
  const n = Number(raw);
  return n > 0 ? Math.min(n, req.maxPageSize) : req.pageSize;
}

function link(req: PageRequest, page: number | null): string {
  const params = new URLSearchParams(req.query);
  if (page === null) params.delete('page');
  else params.set('page', String(page));
  // DRF rebuilds the query sorted by key.
  params.sort();
  const q = params.toString();
  return q ? `${req.base}?${q}` : req.base;
}

export function paginate<T>(items: readonly T[], req: PageRequest): Page<T> {
  const size = pageSizeOf(req);
  const pages = Math.max(1, Math.ceil(items.length / size));
  const raw = req.query.get('page') ?? '1';
  const number = raw === 'last' ? pages : POSITIVE.test(raw) ? Number(raw) : NaN;
  if (!Number.isInteger(number) || number < 1 || number > pages) {
    throw new ApiError(404, { detail: 'Invalid page.' });
  }
  const start = (number - 1) * size;
  return {
    count: items.length,
    next: number < pages ? link(req, number + 1) : null,
    previous: number > 2 ? link(req, number - 1) : number === 2 ? link(req, null) : null,
    results: items.slice(start, start + size),
  };
}
