/**
 * `{A ?? B}` in a template reads the first alternative that is present, so
 * one preset can build the same external_id from a UI export (`Record ID`)
 * and from an API record (`id`).
 */
import { describe, expect, it } from 'vitest';
import { MappingError, compileMapping } from '../../src/crm/mapping.js';

const mapping = compileMapping({
  name: 'fallback',
  version: 1,
  entity: 'companies',
  fields: {
    external_id: { template: 'hubspot:company:{Record ID ?? id|integer}', required: true },
    name: { from: ['Company name', 'properties.name'], required: true },
  },
});

describe('template alternatives (??)', () => {
  it('reads the first alternative present, with the placeholder transforms', () => {
    expect(
      mapping.map({ line: 2, record: { 'Record ID': ' 512.0 ', 'Company name': 'A' } }),
    ).toEqual({ ok: true, line: 2, body: { external_id: 'hubspot:company:512', name: 'A' } });
    expect(mapping.map({ line: 3, record: { id: '513', properties: { name: 'B' } } })).toEqual({
      ok: true,
      line: 3,
      body: { external_id: 'hubspot:company:513', name: 'B' },
    });
  });

  it('skips an alternative holding a null marker; none present makes the field absent', () => {
    expect(
      mapping.map({ line: 2, record: { 'Record ID': 'N/A', id: '514', 'Company name': 'C' } }),
    ).toMatchObject({ ok: true, body: { external_id: 'hubspot:company:514' } });
    expect(mapping.map({ line: 4, record: { 'Company name': 'D' } })).toEqual({
      ok: false,
      line: 4,
      field: 'external_id',
      reason: 'missing: no value in columns Record ID, id',
    });
  });

  it('a failing alternative is reported under the placeholder as written', () => {
    expect(mapping.map({ line: 5, record: { 'Record ID': '12.5', 'Company name': 'E' } })).toEqual({
      ok: false,
      line: 5,
      field: 'external_id',
      reason: 'Record ID ?? id: not a whole number',
      value: '12.5',
    });
  });

  it('refuses an empty alternative', () => {
    expect(() =>
      compileMapping({
        name: 'bad',
        version: 1,
        entity: 'companies',
        fields: { external_id: { template: 'x:{id ?? }' } },
      }),
    ).toThrow(MappingError);
  });
});
