import { describe, expect, it } from 'vitest';
import { HeldRecord, NdjsonParser } from '../../src/crm/ndjson.js';
import type { SourceRow } from '../../src/crm/row.js';

describe('HeldRecord', () => {
  it('holds a record across chunks, and past its limit only that it is too large', () => {
    const held = new HeldRecord(10);
    expect(held.held).toBe(false);
    held.add('{"a":');
    expect(held.text).toBe('{"a":');
    held.add('"12345678"');
    expect(held).toMatchObject({ text: '', oversized: true, held: true });
    held.add('more');
    expect(held.text).toBe('');
    held.reset();
    expect(held).toMatchObject({ text: '', oversized: false, held: false });
  });

  it('an NDJSON line split over chunks past maxRecordBytes is a problem row; the next line reads', () => {
    const p = new NdjsonParser({ maxRecordBytes: 20 });
    const out: SourceRow[] = [];
    for (const c of ['{"id":"', 'x'.repeat(15), 'y'.repeat(15), '"}\n{"id":"2"}\n']) p.push(c, out);
    p.end(out);
    expect(out).toEqual([
      { line: 1, problem: 'line is larger than maxRecordBytes (20 bytes)' },
      { line: 2, record: { id: '2' } },
    ]);
  });
});
