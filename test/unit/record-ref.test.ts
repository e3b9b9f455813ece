/**
 * A reference read row after row: what it finds in one record never depends
 * on the records read before (their keys are remembered per key set, and
 * must never answer for a record with other keys).
 */
import { describe, expect, it } from 'vitest';
import { compileMapping } from '../../src/crm/mapping.js';
import { compileRef } from '../../src/crm/record-ref.js';

type Rec = Record<string, unknown>;

/** Each record through one long-lived reference and through a fresh one, with the expected value. */
function readInTurn(ref: string, cases: [Rec, unknown][]): void {
  const kept = compileRef(ref);
  // Twice: the second time every key set has been seen before.
  for (let round = 0; round < 2; round++) {
    cases.forEach(([rec, want], i) => {
      const label = `${ref} round ${round} record ${i}: ${JSON.stringify(rec)}`;
      expect(kept.read(rec), label).toEqual(want);
      expect(compileRef(ref).read(rec), label).toEqual(want);
    });
  }
}

describe('compileRef, records with different keys in turn', () => {
  it('finds a column present, absent, under another spelling, then as a path into a JSON cell', () => {
    readInTurn('properties.name', [
      [{ 'properties.name': 'exact', id: '1' }, 'exact'],
      [{ id: '2', other: 'x' }, undefined],
      [{ ' PROPERTIES.Name ': 'folded', id: '3' }, 'folded'],
      [{ id: '4', properties: '{"name":"in json text"}' }, 'in json text'],
      [{ id: '5', Properties: { name: 'in an object' } }, 'in an object'],
      [{ id: '6', properties: '{"nom":"x"}' }, undefined],
      [{ ' PROPERTIES.Name ': 'folded again', id: '7' }, 'folded again'],
      [{}, undefined],
      [{ id: '9', PROPERTIES: '{"name":"folded first name"}' }, 'folded first name'],
      [{ 'properties.name': 'exact again' }, 'exact again'],
    ]);
  });

  it('tells apart key sets of the same size', () => {
    readInTurn('Name', [
      [{ Id: '1', Other: 'o' }, undefined],
      [{ Id: '2', ' NAME': 'n2' }, 'n2'],
      [{ Id: '3', Other: 'o' }, undefined],
      [{ Id: '4', 'name ': 'n4' }, 'n4'],
      [{ Id: '5', Nam: 'x' }, undefined],
      [{ ' NAME': 'n6', Id: '6' }, 'n6'],
      [{ Other: 'o', Id: '7' }, undefined],
    ]);
  });

  it('reads the values of each record, not of an earlier one with the same keys', () => {
    readInTurn('company NAME', [
      [{ Id: '1', 'Company Name': 'Acme' }, 'Acme'],
      [{ Id: '2', 'Company Name': 'Globex' }, 'Globex'],
      [{ Id: '3', 'Company Name': '' }, ''],
    ]);
    readInTurn('p.n', [
      [{ P: '{"n":1}' }, 1],
      [{ P: '{"n":2}' }, 2],
      [{ P: { n: 3 } }, 3],
      [{ P: '{"m":4}' }, undefined],
    ]);
  });

  it('never takes `constructor` or `__proto__` from the prototype, whatever came before', () => {
    const own = JSON.parse('{"__proto__":"p","x":1}') as Rec;
    readInTurn('constructor', [
      [{}, undefined],
      [{ constructor: 'c' }, 'c'],
      [{ a: 1 }, undefined],
      [{ ' Constructor ': 'folded' }, 'folded'],
      [{ a: 1 }, undefined],
    ]);
    readInTurn('CONSTRUCTOR', [
      [{}, undefined],
      [{ constructor: 'c' }, 'c'],
      [{ b: 2 }, undefined],
    ]);
    readInTurn('constructor.name', [
      [{}, undefined],
      [{ Constructor: { name: 'n' } }, 'n'],
      [{ x: 1 }, undefined],
    ]);
    readInTurn('__proto__', [
      [{}, undefined],
      [own, 'p'],
      [{ x: 1 }, undefined],
    ]);
    readInTurn('toString', [
      [{ TOSTRING: 't' }, 't'],
      [{}, undefined],
    ]);
  });

  it('sees keys a record gained or lost since it was last read', () => {
    const ref = compileRef('name');
    const rec: Rec = { id: '1' };
    expect(ref.read(rec)).toBeUndefined();
    rec[' NAME '] = 'added';
    expect(ref.read(rec)).toBe('added');
    delete rec[' NAME '];
    expect(ref.read(rec)).toBeUndefined();
  });
});

describe('a mapping, rows with different keys in turn', () => {
  const def = {
    name: 'shapes',
    version: 1,
    entity: 'companies',
    skip: { archived: { from: 'archived', transforms: ['boolean'], equals: true, reason: 'gone' } },
    fields: {
      crm_company_id: { from: ['Record ID', 'id'], transforms: ['integer'], required: true },
      name: { from: ['Company name', 'properties.name'], required: true },
      website: { from: ['Company Domain Name', 'properties.domain'], transforms: ['website'] },
    },
    custom: { owner_id: { from: 'properties.hubspot_owner_id', transforms: ['integer'] } },
  };
  const records: Rec[] = [
    { 'Record ID': '1', 'Company name': 'Csv', 'Company Domain Name': 'csv.example' },
    { id: '2', properties: { name: 'Api', domain: 'api.example', hubspot_owner_id: '7' } },
    { ' RECORD ID': '3', 'company NAME ': 'Folded', 'Company Domain Name': '' },
    { 'Record ID': '4', 'Company name': 'Json cell', properties: '{"domain":"cell.example"}' },
    { id: '5', ARCHIVED: 'true', properties: { name: 'Gone' } },
    { id: '6', archived: false, Properties: { name: 'Folded path', hubspot_owner_id: 8 } },
    { 'Record ID': '7', 'Company name': 'Csv again', 'Company Domain Name': 'again.example' },
  ];

  it('maps each row as a mapping that has seen no other row', () => {
    const kept = compileMapping(def);
    for (let round = 0; round < 2; round++) {
      records.forEach((record, i) => {
        const row = { line: i + 2, record };
        expect(kept.map(row), `round ${round} row ${i}`).toEqual(compileMapping(def).map(row));
      });
    }
    expect(kept.map({ line: 2, record: records[3]! })).toMatchObject({
      ok: true,
      body: { crm_company_id: 4, website: 'https://cell.example' },
    });
    expect(kept.map({ line: 2, record: records[4]! })).toMatchObject({ skip: true });
    expect(kept.map({ line: 2, record: records[5]! })).toMatchObject({
      ok: true,
      body: { name: 'Folded path', custom: '{"owner_id":8}' },
    });
  });

  it('sees the keys of a record changed between two rows', () => {
    const kept = compileMapping(def);
    const record: Rec = { 'Record ID': '1', 'Company name': 'Acme' };
    expect(kept.map({ line: 2, record })).toMatchObject({ ok: true, body: { name: 'Acme' } });
    record[' company domain name '] = 'acme.example';
    expect(kept.map({ line: 3, record })).toMatchObject({
      ok: true,
      body: { website: 'https://acme.example' },
    });
    record.Archived = 'yes';
    expect(kept.map({ line: 4, record })).toMatchObject({ skip: true });
    // Read directly too, outside a row being mapped.
    record[' Company Owner '] = 'Ann';
    expect(compileRef('company owner').read(record)).toBe('Ann');
    delete record[' company domain name '];
    expect(compileRef('company domain name').read(record)).toBeUndefined();
  });
});

describe('a mapping, values the common cases take a shorter way for', () => {
  const m = compileMapping<'companies'>({
    name: 'values',
    version: 1,
    entity: 'companies',
    nullMarkers: ['', 'N/A', '#N/A'],
    fields: {
      crm_company_id: { from: 'id', transforms: ['integer'] },
      external_id: { template: 'x:{id|integer}' },
      name: 'name',
      website: { from: 'web', transforms: ['website'] },
    },
    custom: { note: { from: 'note' }, count: { from: 'count', transforms: ['integer'] } },
  });
  const body = (record: Rec): unknown => {
    const r = m.map({ line: 2, record });
    return r.ok ? r.body : r;
  };

  it('prints an integer placeholder as the number it reads', () => {
    const ids: [string, string, number][] = [
      ['5120000000', 'x:5120000000', 5120000000],
      [' 42 ', 'x:42', 42],
      ['007', 'x:7', 7],
      ['0', 'x:0', 0],
      ['+5', 'x:5', 5],
      ['-0', 'x:0', -0],
      ['12.000', 'x:12', 12],
      ['999999999999999', 'x:999999999999999', 999999999999999],
      ['9007199254740991', 'x:9007199254740991', 9007199254740991],
    ];
    for (const [id, external, n] of ids) {
      expect(body({ id, name: 'A' }), id).toEqual({
        crm_company_id: n,
        external_id: external,
        name: 'A',
      });
    }
    expect(body({ id: '9007199254740993', name: 'A' })).toMatchObject({
      ok: false,
      field: 'crm_company_id',
      reason: 'integer beyond 2^53 loses precision',
    });
  });

  it('tells null markers from text however long, with spaces around', () => {
    expect(body({ id: '1', name: ' N/A ' })).toEqual({ crm_company_id: 1, external_id: 'x:1' });
    expect(body({ id: '1', name: '\u00a0#N/A\u2028' })).not.toHaveProperty('body.name');
    expect(body({ id: '1', name: '\t \n' })).not.toHaveProperty('body.name');
    expect(body({ id: '1', name: 'N/A.' })).toMatchObject({ name: 'N/A.' });
    expect(body({ id: '1', name: ' Acme Corporation ' })).toMatchObject({
      name: ' Acme Corporation ',
    });
  });

  it('writes custom text as JSON.stringify does', () => {
    const notes = [
      'plain',
      'a "quote"',
      'back\\slash',
      'tab\there',
      'line\u2028sep',
      '\ud800 lone',
      '😀',
      'é',
    ];
    for (const note of notes) {
      expect(body({ id: '1', name: 'A', note, count: '12' }), note).toMatchObject({
        custom: `{"note":${JSON.stringify(note)},"count":12}`,
      });
    }
  });

  it('reads websites with ports and hosts beyond ASCII; one with a user name is left out', () => {
    const sites: [string, unknown][] = [
      ['acme.com', 'https://acme.com'],
      ['acme.com:8080/x', 'https://acme.com:8080/x'],
      // A user name before the host is how a link hides where it goes (acme.com@evil.example).
      ['http://user@acme.com:80', undefined],
      ['münchen.de', 'https://münchen.de'],
      ['//acme.com', 'https://acme.com'],
      ['acme.com/@team', 'https://acme.com/@team'],
      [':8080', undefined],
      ['https://:80/x', undefined],
      ['https://…/x', undefined],
      ['info@acme.com', undefined],
    ];
    for (const [web, want] of sites) {
      const r = m.map({ line: 2, record: { id: '1', name: 'A', web } });
      expect(r.ok ? r.body.website : 'row refused', web).toBe(want);
      if (want === undefined) expect(r.ok && r.warnings?.[0]?.field, web).toBe('website');
    }
  });
});
