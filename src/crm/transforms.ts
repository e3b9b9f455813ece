/**
 * The transforms a mapping can apply to a value: a table of small pure
 * functions. Each one is built once, when the mapping compiles, and then
 * called per row with a present value (never null: absent values skip the
 * transforms). A transform returns the new value, `null` when the result is
 * absent, or an `Invalid` carrying the human reason the row is refused.
 *
 * Cells beginning with `= + - @` are spreadsheet formulas only to spreadsheet
 * programs: here they are plain text, never evaluated, so no transform exists
 * for them.
 */
import { z } from 'zod';
import { dateReader } from './dates.js';
import { toSalesforceId18 } from './salesforce-id.js';

/** Why a value was refused; returned (not thrown) to keep the per-row path cheap. */
export class Invalid {
  constructor(readonly reason: string) {}
}

export type Transform = (value: unknown) => unknown;

/** A transform as written in YAML: `trim`, or a one-key object `{ max-length: 80 }`. */
export type TransformSpec = string | Record<string, unknown>;

type Factory = (arg: unknown) => Transform | string;

interface TransformInfo {
  /** none: written as a bare name; optional/required: may or must be `{ name: arg }`. */
  arg: 'none' | 'optional' | 'required';
  make: Factory;
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

function kindOf(v: unknown): string {
  if (Array.isArray(v)) return 'a list';
  return typeof v === 'object' ? 'an object' : `a ${typeof v}`;
}

/** Scalars as text; lists and objects are refused by text transforms. */
function text(v: unknown): string | Invalid {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  return new Invalid(`expected text, got ${kindOf(v)}`);
}

function textOp(op: (s: string) => unknown): Transform {
  return (v) => {
    const s = text(v);
    return s instanceof Invalid ? s : op(s);
  };
}

const INTEGER_TEXT = /^[+-]?\d+(?:\.0*)?$/;

/** `"123"`, `" 123 "`, `"123.0"` and `123` are integers; `12.5` and anything beyond 2^53 are not. */
export function toInteger(v: unknown): number | Invalid {
  if (typeof v === 'number') {
    if (!Number.isFinite(v) || !Number.isInteger(v)) return new Invalid('not a whole number');
    if (!Number.isSafeInteger(v)) return new Invalid('integer beyond 2^53 loses precision');
    return v;
  }
  if (typeof v !== 'string') return new Invalid(`expected a whole number, got ${kindOf(v)}`);
  // The common case, 1 to 15 plain digits, read without a regular expression
  // or Number(): below 10^15 every step of the sum is exact.
  const n = v.length;
  if (n > 0 && n <= 15) {
    let x = 0;
    let i = 0;
    for (; i < n; i++) {
      const d = v.charCodeAt(i) - 48;
      if (d < 0 || d > 9) break;
      x = x * 10 + d;
    }
    if (i === n) return x;
  }
  const s = v.trim();
  if (!INTEGER_TEXT.test(s)) {
    return new Invalid(/^[+-]?\d*\.\d+$/.test(s) ? 'not a whole number' : 'not a number');
  }
  const dot = s.indexOf('.');
  const digits = dot < 0 ? s : s.slice(0, dot);
  // Up to 15 digits Number() is exact; beyond, compare as BigInt, since
  // Number() would already have rounded a 19-digit id.
  if (digits.length <= 15) return Number(digits);
  const big = BigInt(digits);
  if (big > MAX_SAFE || big < -MAX_SAFE) return new Invalid('integer beyond 2^53 loses precision');
  return Number(big);
}

const TRUE_WORDS = new Set(['true', 'yes', '1', 'y']);
const FALSE_WORDS = new Set(['false', 'no', '0', 'n']);

export function toBoolean(v: unknown): boolean | Invalid {
  if (typeof v === 'boolean') return v;
  if (v === 1 || v === 0) return v === 1;
  if (typeof v !== 'string') return new Invalid(`expected yes/no, got ${kindOf(v)}`);
  const s = v.trim().toLowerCase();
  if (TRUE_WORDS.has(s)) return true;
  if (FALSE_WORDS.has(s)) return false;
  return new Invalid('not a yes/no value (true/false, yes/no, 1/0)');
}

const EMAIL = z.regexes.email;

/**
 * An e-mail address as written, trimmed. Its case is kept: the local part is
 * case-sensitive in principle, and the address is the user's. Identity keys
 * and the field diff compare addresses case-insensitively on their own
 * (src/sync/identity.ts, src/sync/diff.ts).
 */
export function toEmail(v: unknown): string | Invalid {
  const s = text(v);
  if (s instanceof Invalid) return s;
  const e = s.trim();
  return EMAIL.test(e) ? e : new Invalid('not a valid e-mail address');
}

// `name:` at the start. `acme.com:8080` is a host and port, not the scheme `acme.com`.
const SCHEME = /^([a-z][a-z0-9+.-]*):(?!\d+(?:[/?#]|$))/i;

/**
 * A website as the CRM wrote it: trimmed, with `https://` in front when it
 * has no scheme. Host and path keep their spelling (case, `www.`, a trailing
 * slash, a query): the platform's `website` is plain text and the value is
 * the user's. Comparing with the platform's value uses a canonical form
 * (src/sync/diff.ts); what is sent is never rewritten. Refused when it is
 * not a host name or an http(s) URL with one: an e-mail address, whitespace
 * inside, a scheme other than http(s), no host, a host with characters no
 * host name has (a spreadsheet formula), text and `@` before the host.
 */
export function toWebsite(v: unknown): string | null | Invalid {
  const t = text(v);
  if (t instanceof Invalid) return t;
  const s = t.trim();
  if (s === '') return null;
  if (/\s/.test(s)) return new Invalid('not a website: contains whitespace');
  let rest: string;
  let out: string;
  // Both regular expressions need a character most websites do not have.
  const scheme = s.includes(':') ? SCHEME.exec(s) : null;
  if (scheme) {
    const name = scheme[1]!.toLowerCase();
    if (name === 'mailto') return new Invalid('an e-mail address, not a website');
    if (name !== 'http' && name !== 'https') {
      return new Invalid(`not a website: scheme ${name}: is not http(s)`);
    }
    if (!s.startsWith('//', scheme[0].length)) {
      return new Invalid(`not a website: expected // after ${scheme[0]}`);
    }
    rest = s.slice(scheme[0].length + 2);
    out = s;
  } else if (s.startsWith('//')) {
    rest = s.slice(2);
    out = `https:${s}`;
  } else {
    if (s.startsWith('@')) return new Invalid('not a website: starts with "@"');
    // `info@acme.com` is an e-mail address; `acme.com/@team` is a website.
    if (s.includes('@') && /^[^/?#]*@/.test(s)) {
      return new Invalid('an e-mail address, not a website');
    }
    rest = s;
    out = `https://${s}`;
  }
  const authority = rest.slice(0, endOfAuthority(rest));
  // `https://acme.com@evil.example` leads to evil.example.
  if (authority.includes('@')) {
    return new Invalid('not a website: text and "@" before the host name');
  }
  const host = withoutPort(authority);
  if (!hasLetterOrDigit(host)) return new Invalid('not a website: no host name');
  const problem = hostProblem(host);
  return problem === undefined ? out : new Invalid(`not a website: ${problem}`);
}

/** A character that is in no host name (`&` and `_` are not in RFC 1123, but are in real exports). */
const NOT_HOST_CHAR = /[^\p{L}\p{M}\p{N}_&.-]/u;
const IPV6_LITERAL = /^\[[0-9a-f:.]+\]$/i;

/**
 * Why `host` is not a host name, or undefined. A host name is labels joined
 * by dots (a trailing dot allowed), made of letters, marks and digits of any
 * script (IDNs as written or as punycode), `-`, `_` and `&`, no label empty
 * or starting with `-`; or an IPv6 address in brackets. A formula such as
 * `=HYPERLINK("http://…")` read as `https://=HYPERLINK("http:…` fails here.
 */
function hostProblem(host: string): string | undefined {
  if (host.startsWith('[')) {
    return IPV6_LITERAL.test(host) ? undefined : 'not an IPv6 address in brackets';
  }
  const bad = NOT_HOST_CHAR.exec(host);
  if (bad) return `${JSON.stringify(bad[0])} cannot be in a host name`;
  const labels = (host.endsWith('.') ? host.slice(0, -1) : host).split('.');
  for (const label of labels) {
    if (label === '') return 'an empty label in the host name';
    if (label.startsWith('-')) return 'a label of the host name starts with "-"';
  }
  return undefined;
}

/** Where the authority of `//…` ends: at the first `/`, `?` or `#`, else the end. */
function endOfAuthority(rest: string): number {
  for (let i = 0; i < rest.length; i++) {
    const c = rest.charCodeAt(i);
    if (c === 0x2f || c === 0x3f || c === 0x23) return i;
  }
  return rest.length;
}

/** `host:8080` and `host:` without the port: what `replace(/:\d*$/, '')` leaves. */
function withoutPort(authority: string): string {
  const colon = authority.lastIndexOf(':');
  if (colon < 0) return authority;
  for (let i = colon + 1; i < authority.length; i++) {
    const c = authority.charCodeAt(i);
    if (c < 0x30 || c > 0x39) return authority;
  }
  return authority.slice(0, colon);
}

/** `/[\p{L}\p{N}]/u.test(s)`, the regular expression only for text beyond ASCII. */
function hasLetterOrDigit(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x80) return /[\p{L}\p{N}]/u.test(s);
    if ((c >= 0x30 && c <= 0x39) || ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x7a)) return true;
  }
  return false;
}

/**
 * Splits a full name: "Last, First" when there is a comma, otherwise the last
 * word is the last name and the words before it the first name. A single
 * word is a first name with no last name.
 */
export function splitName(full: string): { first: string | null; last: string | null } {
  const s = full.trim().replace(/\s+/g, ' ');
  const comma = s.indexOf(',');
  if (comma >= 0) {
    const last = s.slice(0, comma).trim();
    const first = s.slice(comma + 1).trim();
    return { first: first || null, last: last || null };
  }
  const space = s.lastIndexOf(' ');
  if (space < 0) return { first: s || null, last: null };
  return { first: s.slice(0, space), last: s.slice(space + 1) };
}

/** The `date` transform: text read as a date (dates.ts), a refused one `Invalid`. */
function makeDate(arg: unknown): Transform | string {
  const read = dateReader(arg);
  if (typeof read === 'string') return read;
  return textOp((s) => {
    const r = read(s);
    return r.ok ? r.value : new Invalid(r.reason);
  });
}

function positiveInt(name: string, arg: unknown): number | string {
  return typeof arg === 'number' && Number.isInteger(arg) && arg > 0
    ? arg
    : `${name}: expected a positive whole number`;
}

export const TRANSFORMS: Record<string, TransformInfo> = {
  trim: { arg: 'none', make: () => textOp((s) => s.trim()) },
  lower: { arg: 'none', make: () => textOp((s) => s.toLowerCase()) },
  upper: { arg: 'none', make: () => textOp((s) => s.toUpperCase()) },
  integer: { arg: 'none', make: () => toInteger },
  boolean: { arg: 'none', make: () => toBoolean },
  email: { arg: 'none', make: () => toEmail },
  website: { arg: 'none', make: () => toWebsite },
  'salesforce-id': {
    arg: 'none',
    make: () =>
      textOp((s) => {
        const r = toSalesforceId18(s);
        return r.ok ? r.id : new Invalid(r.reason);
      }),
  },
  date: { arg: 'optional', make: makeDate },
  'split-name': {
    arg: 'required',
    make: (arg) => {
      if (arg !== 'first' && arg !== 'last') return 'split-name: expected first or last';
      return textOp((s) => splitName(s)[arg]);
    },
  },
  'max-length': {
    arg: 'required',
    make: (arg) => {
      const n = positiveInt('max-length', arg);
      if (typeof n === 'string') return n;
      return textOp((s) =>
        s.length > n ? new Invalid(`longer than ${n} characters (${s.length})`) : s,
      );
    },
  },
  truncate: {
    arg: 'required',
    make: (arg) => {
      const n = positiveInt('truncate', arg);
      if (typeof n === 'string') return n;
      return textOp((s) => (s.length > n ? s.slice(0, n) : s));
    },
  },
  list: {
    arg: 'optional',
    make: (arg) => {
      const sep = arg ?? ';';
      if (typeof sep !== 'string' || sep === '') return 'list: expected a separator such as ";"';
      return (v) => {
        if (Array.isArray(v)) return v.map((x) => text(x)).filter((x) => typeof x === 'string');
        const s = text(v);
        if (s instanceof Invalid) return s;
        const items = s
          .split(sep)
          .map((x) => x.trim())
          .filter((x) => x !== '');
        return items.length > 0 ? items : null;
      };
    },
  },
};

export const TRANSFORM_NAMES = Object.keys(TRANSFORMS);

/** Builds one transform from its YAML form; a string result is the problem. */
export function buildTransform(spec: unknown): Transform | string {
  let name: string;
  let arg: unknown;
  if (typeof spec === 'string') {
    name = spec;
  } else if (spec && typeof spec === 'object' && !Array.isArray(spec)) {
    const keys = Object.keys(spec);
    if (keys.length !== 1) {
      return `a transform is a name or a one-key object such as { max-length: 80 }, got keys ${keys.join(', ') || '(none)'}`;
    }
    name = keys[0]!;
    arg = (spec as Record<string, unknown>)[name];
  } else {
    return 'a transform is a name or a one-key object such as { max-length: 80 }';
  }
  const info = Object.hasOwn(TRANSFORMS, name) ? TRANSFORMS[name] : undefined;
  if (!info) return `unknown transform "${name}" (known: ${TRANSFORM_NAMES.join(', ')})`;
  if (info.arg === 'none' && arg !== undefined) return `${name} takes no argument`;
  if (info.arg === 'required' && arg === undefined) return `${name} needs an argument`;
  return info.make(arg);
}

/** A transform as written in YAML, built when the definition is parsed; the problem is a zod issue. */
export const TransformSpecSchema = z.unknown().transform((spec, ctx): Transform => {
  const t = buildTransform(spec);
  if (typeof t === 'string') {
    ctx.addIssue({ code: 'custom', message: t });
    return z.NEVER;
  }
  return t;
});

/** Runs transforms in order; stops at the first Invalid or absent result. */
export function pipeline(transforms: Transform[]): Transform {
  if (transforms.length === 0) return (v) => v;
  if (transforms.length === 1) return transforms[0]!;
  return (v) => {
    let out = v;
    for (const t of transforms) {
      out = t(out);
      if (out === null || out instanceof Invalid) return out;
    }
    return out;
  };
}
