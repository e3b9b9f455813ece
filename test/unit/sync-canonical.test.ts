import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/sync/canonical.js';
import { CONTENT_HASH_LENGTH, contentHash } from '../../src/sync/hash.js';

/** The same object with its keys in reverse order, recursively. */
function reorder(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reorder);
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).reverse();
    return Object.fromEntries(entries.map(([k, v]) => [k, reorder(v)]));
  }
  return value;
}

describe('canonicalJson', () => {
  it.each([
    [{ b: 1, a: 2 }, '{"a":2,"b":1}'],
    [{ a: undefined, b: null }, '{"b":null}'],
    [{ z: { y: 1, x: [3, { d: 1, c: 2 }] } }, '{"z":{"x":[3,{"c":2,"d":1}],"y":1}}'],
    [[undefined, 1], '[null,1]'],
    [{ n: 1e21, m: -0, f: 0.1 }, '{"f":0.1,"m":0,"n":1e+21}'],
    [{ s: 'a"b\n\u2028' }, JSON.stringify({ s: 'a"b\n\u2028' })],
    [{ nan: Number.NaN }, '{"nan":null}'],
    ['x', '"x"'],
    [undefined, 'null'],
    // A Date by its toJSON, as JSON.stringify writes it: two dates never hash alike.
    [{ at: new Date(Date.UTC(2024, 0, 5, 10)) }, '{"at":"2024-01-05T10:00:00.000Z"}'],
    // A key named "undefined" is a key like any other: written once, in its place.
    [{ undefined: 1, a: 2 }, '{"a":2,"undefined":1}'],
  ])('%j → %s', (input, expected) => {
    expect(canonicalJson(input)).toBe(expected);
  });

  it('writes a bigint as its digits: no body holds one (zod refuses it), but a hash must not crash', () => {
    expect(canonicalJson({ n: 12345678901234567890n })).toBe('{"n":12345678901234567890}');
  });

  it('parses back to the same value as JSON.stringify gives', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        expect(JSON.parse(canonicalJson(v))).toEqual(JSON.parse(JSON.stringify(v)));
      }),
    );
  });

  it('is independent of key order', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        expect(canonicalJson(reorder(v))).toBe(canonicalJson(v));
      }),
    );
  });

  it('is idempotent: canonical of parsed canonical is the same text', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        const once = canonicalJson(v);
        expect(canonicalJson(JSON.parse(once))).toBe(once);
      }),
    );
  });
});

/** The first release's writer: keys sorted and quoted on every object, strings by JSON.stringify. */
function referenceJson(value: unknown): string | undefined {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : 'null';
  if (typeof value === 'boolean') return String(value);
  if (value === null || typeof value !== 'object') return value === null ? 'null' : undefined;
  if (Array.isArray(value)) return `[${value.map((v) => referenceJson(v) ?? 'null').join(',')}]`;
  const parts: string[] = [];
  for (const k of Object.keys(value).sort()) {
    const v = referenceJson((value as Record<string, unknown>)[k]);
    if (v !== undefined) parts.push(`${JSON.stringify(k)}:${v}`);
  }
  return `{${parts.join(',')}}`;
}

describe("canonicalJson against the first release's writer", () => {
  it('writes every JSON value alike, key sets met again in another order included', () => {
    // Keys from a small alphabet with escapes and surrogates, so that key sets repeat.
    const key = fc.constantFrom('a', 'b', 'B', '"q"', 'é', '\u{1F600}', '\ud800', 'a\nb', 'z', '');
    const value = fc.letrec((tie) => ({
      leaf: fc.oneof(
        fc.string(),
        fc.double(),
        fc.boolean(),
        fc.constant(null),
        fc.string({ unit: 'binary' }),
        fc.constantFrom('\ud800x', 'a\udfff', '\u0000\u001f', 'tab\there'),
      ),
      node: fc.oneof(
        { depthSize: 'small' },
        tie('leaf'),
        fc.array(tie('node'), { maxLength: 4 }),
        fc.dictionary(key, tie('node'), { maxKeys: 6 }),
      ),
    })).node;
    fc.assert(
      fc.property(fc.array(value, { minLength: 1, maxLength: 6 }), (values) => {
        for (const v of [...values, ...values.map(reorder)])
          expect(canonicalJson(v)).toBe(referenceJson(v) ?? 'null');
      }),
      { numRuns: 1000 },
    );
  });
});

describe('contentHash', () => {
  it('is 22 base64url characters', () => {
    const h = contentHash({ name: 'Acme' }, 'v1');
    expect(h).toHaveLength(CONTENT_HASH_LENGTH);
    expect(h).toMatch(/^[A-Za-z0-9_-]{22}$/);
  });

  it('is stable across runs (pinned value)', () => {
    expect(contentHash({ name: 'Acme', external_id: 'A-1' }, 'fp1')).toBe(
      contentHash({ external_id: 'A-1', name: 'Acme' }, 'fp1'),
    );
    expect(contentHash({}, '')).toBe('SwPWqf-qm54T73h3svZxew');
  });

  it('changes with the body and with the mapping fingerprint', () => {
    const base = contentHash({ name: 'Acme' }, 'fp1');
    expect(contentHash({ name: 'Acme ' }, 'fp1')).not.toBe(base);
    expect(contentHash({ name: 'Acme' }, 'fp2')).not.toBe(base);
    expect(contentHash({ name: 'Acme', website: null }, 'fp1')).not.toBe(base);
    expect(contentHash({ name: 'Acme', website: undefined }, 'fp1')).toBe(base);
  });

  it('is the first 16 bytes of the SHA-256 of the length-prefixed fingerprint and the canonical JSON', () => {
    // The hash stored in state since the first release: a new way to compute it must agree bit for bit.
    const reference = (body: unknown, fingerprint: string): string =>
      createHash('sha256')
        .update(`${fingerprint.length}:${fingerprint}\n`)
        .update(canonicalJson(body))
        .digest()
        .subarray(0, 16)
        .toString('base64url');
    fc.assert(
      fc.property(fc.jsonValue(), fc.string(), (body, fingerprint) => {
        expect(contentHash(body, fingerprint)).toBe(reference(body, fingerprint));
      }),
      { numRuns: 2000 },
    );
  });

  it('does not confuse fingerprint and body boundaries', () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), fc.string(), (a, b, c) => {
        fc.pre(a !== b);
        expect(contentHash(c, a)).not.toBe(contentHash(c, b));
      }),
    );
  });
});
