/**
 * The path grammar (parse, evaluate, explain a miss) and how a `from` text is
 * resolved against a record: column first, then the path, JSON-valued CSV
 * cells parsed once per row, prototype keys never read.
 */
import { describe, expect, it, vi } from 'vitest';
import {
  ALL,
  evaluate,
  explainMiss,
  formatSegments,
  parsePath,
  PathSyntax,
  type JsonPath,
} from '../../src/crm/json-path.js';
import { compileRef } from '../../src/crm/record-ref.js';

function path(text: string): JsonPath {
  const p = parsePath(text);
  if (p instanceof PathSyntax) throw new Error(p.reason);
  return p;
}

const at = (text: string, value: unknown) => evaluate(path(text).segments, value);

describe('parsePath', () => {
  it('reads names, indexes, [*] and quoted keys', () => {
    expect(path('a.b').segments).toEqual([{ key: 'a' }, { key: 'b' }]);
    expect(path('a[0]').segments).toEqual([{ key: 'a' }, { index: 0, key: '0' }]);
    expect(path('a.0').segments).toEqual(path('a[0]').segments);
    expect(path('a[*].b')).toEqual({
      text: 'a[*].b',
      segments: [{ key: 'a' }, ALL, { key: 'b' }],
      multi: true,
    });
    expect(path('["@odata.etag"]').segments).toEqual([{ key: '@odata.etag' }]);
    expect(path("a['b.c'][2]").segments).toEqual([
      { key: 'a' },
      { key: 'b.c' },
      { index: 2, key: '2' },
    ]);
    expect(path('["_ownerid_value@OData.Community.Display.V1.FormattedValue"]').segments).toEqual([
      { key: '_ownerid_value@OData.Community.Display.V1.FormattedValue' },
    ]);
    expect(path('a["say \\"hi\\""]').segments).toEqual([{ key: 'a' }, { key: 'say "hi"' }]);
    expect(path('Owner Info.e-mail').segments).toEqual([{ key: 'Owner Info' }, { key: 'e-mail' }]);
  });

  it('keeps a leading all-digit name a key, and trims the whole text', () => {
    expect(path('  2024.total ').segments).toEqual([{ key: '2024' }, { key: 'total' }]);
    expect(path('2024.5').segments).toEqual([{ key: '2024' }, { index: 5, key: '5' }]);
    expect(path('a').multi).toBe(false);
  });

  it.each([
    ['a..b', /empty name at character 3/],
    ['a.', /empty name/],
    ['a[0', /unclosed \[/],
    ['a["b]', /unclosed quote/],
    ['a["b"x]', /expected \]/],
    ['a[-1]', /write \[N\] for an item/],
    ['a[x]', /write \[N\] for an item/],
    ['[0].a', /starts with a name/],
    ['a[0]b', /expected \. or \[/],
    ['a]', /expected \. or \[/],
    ['  ', /empty path/],
  ])('refuses %j', (text, reason) => {
    const p = parsePath(text);
    expect(p).toBeInstanceOf(PathSyntax);
    expect((p as PathSyntax).reason).toMatch(reason);
  });

  it('writes segments back in its own notation', () => {
    for (const text of ['a.b[0].c', 'values.name[*].value', '["@odata.etag"]', 'a["b.c"]'])
      expect(formatSegments(path(text).segments)).toBe(text);
    expect(formatSegments(path('a.0.b').segments)).toBe('a[0].b');
  });
});

describe('evaluate', () => {
  const attio = {
    values: {
      name: [{ value: 'Acme' }],
      domains: [{ domain: 'acme.com' }, { domain: 'acme.io' }, { domain: null }],
    },
  };

  it('walks objects and lists', () => {
    expect(at('values.name[0].value', attio)).toBe('Acme');
    expect(at('values.name.0.value', attio)).toBe('Acme');
    expect(at('values.domains[1].domain', attio)).toBe('acme.io');
    expect(at('owner_id.name', { owner_id: { id: 1, name: 'Sales' } })).toBe('Sales');
  });

  it('finds nothing past the end of a list or on the wrong kind of value', () => {
    expect(at('values.name[1].value', attio)).toBeUndefined();
    expect(at('values.name.value', attio)).toBeUndefined();
    expect(at('values.name[0].value.x', attio)).toBeUndefined();
    expect(at('a.length', { a: [1, 2] })).toBeUndefined();
    expect(at('a.length', { a: 'text' })).toBeUndefined();
    expect(at('a.b', { a: null })).toBeUndefined();
  });

  it('gives a JSON null at the end as null: the key is there', () => {
    expect(at('a.b', { a: { b: null } })).toBeNull();
    expect(at('a.b', { a: { b: false } })).toBe(false);
  });

  it('reads an index as a key of an object', () => {
    expect(at('a[0]', { a: { 0: 'zero' } })).toBe('zero');
    expect(at('a.0', { a: { 0: 'zero' } })).toBe('zero');
  });

  it('[*] gives the list of what it found, nulls left out, or nothing', () => {
    expect(at('values.domains[*].domain', attio)).toEqual(['acme.com', 'acme.io']);
    expect(at('values.name[*].missing', attio)).toBeUndefined();
    expect(at('values.none[*].x', attio)).toBeUndefined();
    expect(at('a[*]', { a: [] })).toBeUndefined();
    expect(at('a[*].b[*]', { a: [{ b: [1, 2] }, { b: [3] }, {}] })).toEqual([1, 2, 3]);
    expect(at('a[*].b', { a: [{ b: [1, 2] }, { b: [3] }] })).toEqual([[1, 2], [3]]);
  });

  it('[*] on a value that is not a list takes it as a list of one', () => {
    expect(at('owner[*].name', { owner: { name: 'Sales' } })).toEqual(['Sales']);
    expect(at('tag[*]', { tag: 'vip' })).toEqual(['vip']);
    expect(at('tag[*]', { tag: null })).toBeUndefined();
  });

  it('never reads a key from the prototype', () => {
    expect(at('a.constructor', { a: {} })).toBeUndefined();
    expect(at('a.__proto__', { a: {} })).toBeUndefined();
    expect(at('a.toString', { a: {} })).toBeUndefined();
    const parsed = JSON.parse('{"a":{"__proto__":{"x":1},"constructor":"c"}}') as unknown;
    expect(at('a.__proto__.x', parsed)).toBe(1);
    expect(at('a.constructor', parsed)).toBe('c');
    expect(({} as { x?: unknown }).x).toBeUndefined();
  });
});

describe('explainMiss', () => {
  it('says where the path stopped and what was there', () => {
    const rec = { values: { name: [{ value: 'A' }] } };
    const segs = path('values.nme[0].value').segments;
    expect(explainMiss(segs, rec)).toEqual({ depth: 1, at: rec.values });
    expect(explainMiss(path('values.name.value').segments, rec)).toEqual({
      depth: 2,
      at: rec.values.name,
    });
    expect(explainMiss(path('values.name[0].value').segments, rec)).toBeNull();
    expect(explainMiss(path('a.b.c').segments, { a: { b: null } })).toEqual({
      depth: 2,
      at: null,
    });
    expect(explainMiss(path('a[*].x').segments, { a: [{ y: 1 }, { x: 2 }] })).toBeNull();
    expect(explainMiss(path('a[*].b.c').segments, { a: [{ y: 1 }, { b: { d: 1 } }] })).toEqual({
      depth: 3,
      at: { d: 1 },
    });
  });
});

describe('compileRef', () => {
  it('reads a column of that exact name before a path (CSV headers hold dots)', () => {
    const ref = compileRef('Company.Name');
    expect(ref.read({ 'Company.Name': 'Acme', Company: { Name: 'Other' } })).toBe('Acme');
    expect(ref.read({ Company: { Name: 'Other' } })).toBe('Other');
  });

  it('matches a column case-insensitively after trimming, for the first name of a path too', () => {
    expect(compileRef('NAME').read({ ' Name ': 'Acme' })).toBe('Acme');
    expect(compileRef('owner.email').read({ Owner: { email: 'a@b.co' } })).toBe('a@b.co');
    // Deeper keys are exact.
    expect(compileRef('owner.EMAIL').read({ owner: { email: 'a@b.co' } })).toBeUndefined();
  });

  it('reads the real paths of CRM APIs', () => {
    const attio = {
      id: { record_id: 'bf071e1f' },
      values: { name: [{ value: 'Acme' }], domains: [{ domain: 'acme.com' }] },
    };
    expect(compileRef('values.name[0].value').read(attio)).toBe('Acme');
    expect(compileRef('values.domains[0].domain').read(attio)).toBe('acme.com');
    expect(compileRef('id.record_id').read(attio)).toBe('bf071e1f');
    expect(compileRef('owner_id.name').read({ owner_id: { id: 7, name: 'Sales' } })).toBe('Sales');
    expect(compileRef('Owner.email').read({ Owner: { name: 'x', email: 'o@zoho.example' } })).toBe(
      'o@zoho.example',
    );
    const dataverse = {
      '@odata.etag': 'W/"123"',
      '_ownerid_value@OData.Community.Display.V1.FormattedValue': 'Sales Team',
    };
    expect(compileRef('["@odata.etag"]').read(dataverse)).toBe('W/"123"');
    expect(compileRef('@odata.etag').read(dataverse)).toBe('W/"123"');
    expect(
      compileRef('["_ownerid_value@OData.Community.Display.V1.FormattedValue"]').read(dataverse),
    ).toBe('Sales Team');
    expect(compileRef('properties.domain').read({ properties: { domain: 'acme.com' } })).toBe(
      'acme.com',
    );
  });

  it('keeps reading columns of later rows once a path has matched', () => {
    const ref = compileRef('a.b');
    expect(ref.read({ a: { b: 1 } })).toBe(1);
    expect(ref.read({ 'a.b': 2, a: { b: 1 } })).toBe(2);
    expect(ref.read({ A: { b: 3 } })).toBe(3);
    expect(ref.read({ ' A.B ': 4 })).toBe(4);
  });

  it('walks into a CSV cell holding JSON, parsing it once per row', () => {
    const parse = vi.spyOn(JSON, 'parse');
    try {
      const name = compileRef('properties.name');
      const domain = compileRef('properties.domains[0]');
      const row = { id: '1', properties: '{"name":"Acme","domains":["acme.com"]}' };
      expect(name.read(row)).toBe('Acme');
      expect(domain.read(row)).toBe('acme.com');
      expect(name.read(row)).toBe('Acme');
      expect(parse).toHaveBeenCalledTimes(1);
      const next = { id: '2', properties: ' {"name":"Globex"}' };
      expect(name.read(next)).toBe('Globex');
      expect(parse).toHaveBeenCalledTimes(2);
      // Text that is not JSON is never handed to the parser.
      expect(name.read({ properties: 'plain text' })).toBeUndefined();
      expect(parse).toHaveBeenCalledTimes(2);
      expect(name.read({ properties: '{broken' })).toBeUndefined();
      expect(compileRef('tags[*]').read({ tags: '["a","b"]' })).toEqual(['a', 'b']);
    } finally {
      parse.mockRestore();
    }
  });

  it('never reads a column or key from the prototype', () => {
    for (const name of ['constructor', '__proto__', 'toString', 'constructor.name', '__proto__.x'])
      expect(compileRef(name).read({}), name).toBeUndefined();
    expect(compileRef('a.constructor.name').read({ a: {} })).toBeUndefined();
    expect(compileRef('["constructor"]').read({})).toBeUndefined();
    const own = JSON.parse('{"constructor":"c","__proto__":{"x":1}}') as Record<string, unknown>;
    expect(compileRef('constructor').read(own)).toBe('c');
    expect(compileRef('__proto__.x').read(own)).toBe(1);
  });

  it('is a column only when the text is not a path, and says why for one that looks like a path', () => {
    const ref = compileRef('Tags [old]');
    expect(ref.path).toBeNull();
    expect(ref.syntax).toMatch(/write \[N\] for an item/);
    expect(ref.read({ 'Tags [old]': 'x' })).toBe('x');
    expect(compileRef('Company name').syntax).toBeUndefined();
  });

  it('explains a miss: the column, a cell that is not JSON, or the step of the path', () => {
    const rec = { values: { name: [{ value: 'A' }] } };
    expect(compileRef('Name').miss({ Id: '1' })).toEqual({ depth: 0, at: { Id: '1' } });
    expect(compileRef('values.nme').miss(rec)).toEqual({ depth: 1, at: rec.values });
    expect(compileRef('properties.name').miss({ properties: 'n/a' })).toEqual({
      depth: 0,
      at: 'n/a',
      notJson: true,
    });
    expect(compileRef('values.name[0].value').miss(rec)).toBeNull();
  });
});
