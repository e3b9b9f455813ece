import { setFlagsFromString } from 'node:v8';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseJson } from '../../src/crm/json-value.js';

/** A value written out so that key order, -0, prototypes and own `__proto__` keys all show. */
function shape(v: unknown): unknown {
  if (typeof v === 'number') return Object.is(v, -0) ? '-0' : v;
  if (Array.isArray(v)) return ['array', ...v.map(shape)];
  if (v !== null && typeof v === 'object') {
    return [
      Object.getPrototypeOf(v) === Object.prototype ? 'object' : 'other prototype',
      ...Object.keys(v).map((k) => [k, shape((v as Record<string, unknown>)[k])]),
    ];
  }
  return v;
}

function outcome(parse: (text: string) => unknown, text: string): unknown {
  try {
    return { value: shape(parse(text)) };
  } catch (err) {
    return { error: `${(err as Error).name}: ${(err as Error).message}` };
  }
}

function sameAsJsonParse(text: string): void {
  expect(outcome(parseJson, text)).toEqual(outcome(JSON.parse, text));
}

/** JSON texts: values written compactly, indented, or with random JSON whitespace between tokens. */
const texts = fc
  .tuple(
    fc.jsonValue({ maxDepth: 4 }),
    fc.constantFrom(0, 2),
    fc.array(fc.constantFrom(' ', '\t', '\n', '\r'), { maxLength: 3 }),
  )
  .map(([v, indent, ws]) => {
    const text = JSON.stringify(v, null, indent);
    return ws.length === 0 ? text : text.replace(/([,:[\]{}])/g, `${ws.join('')}$1${ws.join('')}`);
  });

/** Texts near JSON: a JSON text with one character inserted, removed or replaced. */
const nearTexts = fc
  .tuple(
    texts,
    fc.nat(),
    fc.constantFrom('insert', 'remove', 'replace'),
    fc.constantFrom(
      ...'"\\/{}[],:-+.eE0123456789tfnrubx \t\n\u0000\u001f\u2028\ud800 '.split(''),
      'true',
      'nul',
      '\\u00',
      '\\uZZZZ',
    ),
  )
  .map(([text, at, how, s]) => {
    const i = text.length === 0 ? 0 : at % text.length;
    if (how === 'insert') return text.slice(0, i) + s + text.slice(i);
    if (how === 'remove') return text.slice(0, i) + text.slice(i + 1);
    return text.slice(0, i) + s + text.slice(i + 1);
  });

describe('parseJson', () => {
  it('returns what JSON.parse returns for any JSON text', () => {
    fc.assert(fc.property(texts, sameAsJsonParse), { numRuns: 2000 });
  });

  it('accepts and rejects exactly what JSON.parse does, with its message', () => {
    fc.assert(fc.property(nearTexts, sameAsJsonParse), { numRuns: 5000 });
  });

  it('parses a range of a longer text in place, as JSON.parse parses that slice', () => {
    // What lies around the range (the next line, the next element) is never part of the value.
    const around = fc.constantFrom(
      '',
      '\n',
      '\r\n',
      ' ',
      ',',
      ']',
      '}',
      '"',
      '1',
      'e5',
      '\n{"a":1}',
      'true',
    );
    fc.assert(
      fc.property(fc.oneof(texts, nearTexts), around, around, (text, before, after) => {
        const whole = before + text + after;
        const slice = (): unknown => parseJson(whole, before.length, before.length + text.length);
        expect(outcome(slice, '')).toEqual(outcome(JSON.parse, text));
      }),
      { numRuns: 3000 },
    );
  });

  it('decodes every escape as JSON.parse does', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (s) => {
        sameAsJsonParse(JSON.stringify(s));
        sameAsJsonParse(JSON.stringify({ [s]: s }));
      }),
      { numRuns: 2000 },
    );
    for (const text of [
      '"\\u00e9\\u00C9\\/\\b\\f\\n\\r\\t\\"\\\\"',
      '"\\ud83d\\ude00 \\ud800 \\udfff"',
      '"a\\u12"',
      '"a\\u12g4"',
      '"\\x41"',
      '"\\',
      '"tab\there"',
      '"line\u2028sep"',
    ]) {
      sameAsJsonParse(text);
    }
  });

  it('matches JSON.parse on the edges of the grammar', () => {
    for (const text of [
      '',
      ' ',
      '0',
      '-0',
      '-',
      '01',
      '1.',
      '.5',
      '1e',
      '1e+',
      '1E-7',
      '-1.25e+300',
      '1e400',
      '123456789012345678901234567890',
      'true',
      'tru',
      'truex',
      'nul',
      'null null',
      '[1,]',
      '[,1]',
      '{"a":1,}',
      '{"a" 1}',
      "{'a':1}",
      '{a:1}',
      '{"a":1}}',
      '[1 2]',
      '\ufeff{}',
      '\u00a0{}',
      ' \t\r\n{ "a" : [ 1 , { } , [ ] ] } \n',
    ]) {
      sameAsJsonParse(text);
    }
  });

  it('keeps duplicate keys last-wins in first-seen order, and __proto__ as an own key', () => {
    sameAsJsonParse('{"b":1,"a":2,"b":3}');
    sameAsJsonParse('{"2":"x","1":"y","a":"z"}');
    sameAsJsonParse('{"__proto__":{"polluted":true},"a":1}');
    const v = parseJson('{"__proto__":{"polluted":true}}') as Record<string, unknown>;
    expect(Object.getPrototypeOf(v)).toBe(Object.prototype);
    expect(Object.keys(v)).toEqual(['__proto__']);
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
  });

  it('reuses the previous record key only where the text really spells it', () => {
    // The first record teaches keys by position; the second writes other keys
    // (and escaped look-alikes) at the same positions.
    expect(parseJson('{"a\\\\b":1,"id":2,"name":3}')).toEqual({ 'a\\b': 1, id: 2, name: 3 });
    expect(parseJson('{"a\\b":1,"idx":2,"nam":3}')).toEqual({ 'a\b': 1, idx: 2, nam: 3 });
    expect(parseJson('{"id":1,"name":2}')).toEqual({ id: 1, name: 2 });
    expect(parseJson('{"id":1,"name":2,"a":{"id":3}}')).toEqual({ id: 1, name: 2, a: { id: 3 } });
    expect(parseJson('{"i":1,"d":2}')).toEqual({ i: 1, d: 2 });
  });

  it('parses nesting deeper than its recursion goes (JSON.parse has no such limit)', () => {
    const depth = 100_000;
    const text = `{"a":${'['.repeat(depth)}"x"${']'.repeat(depth)}}`;
    let v = (parseJson(text) as { a: unknown }).a;
    for (let d = 0; d < depth; d++) v = (v as unknown[])[0];
    expect(v).toBe('x');
  });

  it('leaves short string values out of the string table, unlike JSON.parse', () => {
    // %IsInternalizedString is V8's own answer; the flag is on only while this compiles.
    setFlagsFromString('--allow-natives-syntax');
    let isInternalized: (s: string) => boolean;
    try {
      isInternalized = new Function(
        's',
        'return %IsInternalizedString(s)',
      ) as typeof isInternalized;
    } finally {
      setFlagsFromString('--no-allow-natives-syntax');
    }
    const text = '{"Record ID":"5120000123","n":["x1","abcdefghij"],"p":{"q":"ab"}}';
    const native = JSON.parse(text) as { 'Record ID': string; p: { q: string } };
    // The probe works: every V8 internalizes a two-character JSON.parse value
    // (Node 20's, every value of up to 10 characters).
    expect(isInternalized(native.p.q)).toBe(true);
    // Alone, and in place inside a chunk (as the NDJSON and JSON readers call it).
    const chunk = `{"x":1}\n${text}\r\n{"y":2}`;
    for (const own of [
      parseJson(text),
      parseJson(chunk, 8, 8 + text.length + 1),
    ] as (typeof native & { n: string[]; p: { q: string } })[]) {
      expect(own).toEqual(native);
      for (const s of [own['Record ID'], ...own.n, own.p.q]) expect(isInternalized(s)).toBe(false);
    }
  });
});
