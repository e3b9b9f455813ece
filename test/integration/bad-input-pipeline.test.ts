/**
 * The bad-input corpus (test/fixtures/bad/) through the whole pipeline: each
 * file is the source of a job run by the engine (planning, thresholds,
 * writes, finalize) against the sandbox. A file that cannot be read fails its
 * run before any write, with a message naming the file (and the line, where
 * one applies); a readable file with bad rows lists each of them in the run's
 * failures with its line and reason, writes nothing for them, and syncs its
 * good rows.
 */
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { countWrites, useEngines, type EngineHarness } from '../harness/engine.js';

const engine = useEngines();
const BAD = resolve(import.meta.dirname, '../fixtures/bad');

// One mapping for the corpus: its files name a company "Name" (or "name", or
// "email"); the identity comes from that name so the good rows are told apart.
const mapping = (name: string, extra: Record<string, unknown> = {}) => ({
  name: 'bad-corpus',
  version: 1,
  entity: 'companies',
  fields: {
    name: { from: name, transforms: ['trim'], required: true },
    external_id: { template: `bad:{${name}}`, required: true },
    ...extra,
  },
});

function job(file: string, source: Record<string, unknown> = {}, map = mapping('Name')) {
  return {
    entity: 'companies',
    source: { path: `${BAD}/${file}`, ...source },
    mapping: map,
    thresholds: { maxInvalidShare: 1, maxChangeShare: 1 },
  };
}

async function runFile(h: EngineHarness, spec: ReturnType<typeof job>) {
  h.writeJob('bad', spec);
  return h.runJob('bad', { timeoutMs: 30_000 });
}

interface Unreadable {
  file: string;
  source?: Record<string, unknown>;
  line?: number;
  says: string;
}

const unreadable: Unreadable[] = [
  { file: 'unterminated-quote.csv', line: 3, says: 'unterminated quoted field' },
  { file: 'wrong-delimiter.csv', source: { delimiter: ',' }, line: 1, says: 'probably ";"' },
  { file: 'binary-garbage.csv', says: 'not a text export' },
  { file: 'zip-archive.csv', says: 'zip archive' },
  { file: 'empty.csv', says: 'empty export (0 bytes)' },
  { file: 'bom-only.csv', says: 'empty export' },
  { file: 'blank-lines-only.csv', says: 'only blank lines' },
  { file: 'truncated.csv.gz', says: 'truncated gzip' },
  { file: 'corrupt.csv.gz', says: 'corrupt gzip' },
  { file: 'utf16-no-bom.txt', says: 'UTF-16 LE without a byte-order mark' },
  { file: 'not-an-array.json', says: 'not an array of records' },
  { file: 'number.json', line: 1, says: 'the export is a number' },
  { file: 'truncated.json', line: 3, says: 'cut short' },
  { file: 'mismatched.json', line: 3, says: "unexpected ']'" },
  { file: 'trailing-comma.json', line: 1, says: 'trailing comma' },
];

describe('bad exports through the whole pipeline', () => {
  it('every unreadable file fails its run before any write, naming the file and line', async () => {
    const h = await engine();
    for (const c of unreadable) {
      const path = `${BAD}/${c.file}`;
      const run = await runFile(h, job(c.file, c.source));
      expect(run.status, c.file).toBe('failed');
      const where = c.line === undefined ? `${path}: ` : `${path} line ${c.line}: `;
      expect(run.error, c.file).toContain(where);
      expect(run.error, c.file).toContain(c.says);
    }
    expect(countWrites(await h.stats())).toBe(0);
    expect((await h.dump()).companies).toEqual([]);
  });

  it('ragged rows are failures with line and reason; the good rows sync', async () => {
    const h = await engine();
    const run = await runFile(
      h,
      job(
        'ragged-rows.csv',
        {},
        mapping('Name', { website: { from: 'Website', transforms: ['website'] } }),
      ),
    );
    expect(run.status, run.error).toBe('completed');
    expect(run.counts).toMatchObject({ read: 4, created: 2, invalid: 2 });
    const failures = await h.failures(run.id);
    expect(failures.map((f) => [f.line, f.kind, f.reason])).toEqual([
      [3, 'invalid', 'row has 2 fields, header has 3'],
      [4, 'invalid', 'row has 4 fields, header has 3'],
    ]);
    const companies = (await h.dump()).companies;
    expect(companies.map((c) => [c.external_id, c.name, c.website]).sort()).toEqual([
      ['bad:Acme', 'Acme', 'https://acme.com'],
      ['bad:Umbrella', 'Umbrella', 'https://umbrella.example'],
    ]);
  });

  it('a row that is not UTF-8 syncs as Windows-1252 with a warning naming the byte', async () => {
    const h = await engine();
    const run = await runFile(h, job('invalid-utf8.csv'));
    expect(run.status, run.error).toBe('completed');
    expect(run.counts).toMatchObject({ read: 3, created: 3, invalid: 0, warnings: 1 });
    const failures = await h.failures(run.id);
    expect(failures.map((f) => [f.line, f.kind, f.field, f.reason])).toEqual([
      [3, 'warning', '(row)', 'decoded as windows-1252: not UTF-8 at byte 30 of the export'],
    ]);
    expect((await h.dump()).companies.map((c) => c.name).sort()).toEqual([
      'Acme',
      'Café Noir',
      'Globex',
    ]);
  });

  it('with encoding utf-8, a row that is not UTF-8 is a failure naming the byte; the rows around it sync', async () => {
    const h = await engine();
    const run = await runFile(h, job('invalid-utf8.csv', { encoding: 'utf-8' }));
    expect(run.status, run.error).toBe('completed');
    expect(run.counts).toMatchObject({ read: 3, created: 2, invalid: 1 });
    const failures = await h.failures(run.id);
    expect(failures.map((f) => [f.line, f.kind, f.reason])).toEqual([
      [
        3,
        'invalid',
        'not UTF-8 at byte 30 of the export; set source.encoding if the export is Windows-1252',
      ],
    ]);
    expect((await h.dump()).companies.map((c) => c.name).sort()).toEqual(['Acme', 'Globex']);
  });

  it('an NDJSON line that is not JSON is a failure; the lines around it sync', async () => {
    const h = await engine();
    const run = await runFile(h, job('bad-line.ndjson', {}, mapping('email')));
    expect(run.status, run.error).toBe('completed');
    expect(run.counts).toMatchObject({ read: 3, created: 2, invalid: 1 });
    const failures = await h.failures(run.id);
    expect(failures).toHaveLength(1);
    expect(failures[0]).toMatchObject({ line: 2, kind: 'invalid' });
    expect(failures[0]!.reason).toMatch(/^invalid JSON: /);
    const names = (await h.dump()).companies.map((c) => c.name).sort();
    expect(names).toEqual(['ann@acme.com', 'cy@acme.com']);
  });

  it('a header-only file completes with nothing to do; duplicate headers stay addressable', async () => {
    const h = await engine();
    const empty = await runFile(h, job('header-only.csv', {}, mapping('Company name')));
    expect(empty.status, empty.error).toBe('completed');
    expect(empty.counts).toMatchObject({ read: 0, created: 0, invalid: 0 });
    expect(countWrites(await h.stats())).toBe(0);

    const dup = await runFile(h, job('duplicate-header.csv', {}, mapping('Email (2)')));
    expect(dup.status, dup.error).toBe('completed');
    expect(dup.counts).toMatchObject({ read: 1, created: 1 });
    expect((await h.dump()).companies.map((c) => c.external_id)).toEqual(['bad:ann@other.com']);
  });
});
