import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { CsvParser } from '../../src/crm/csv.js';
import { bomEncoding, decodeText, encodingName, notTextReason } from '../../src/crm/decode.js';
import { normaliseHeader } from '../../src/crm/headers.js';
import { JsonArrayParser } from '../../src/crm/json.js';
import { NdjsonParser } from '../../src/crm/ndjson.js';
import { sniffFormat } from '../../src/crm/read.js';
import type { SourceRow } from '../../src/crm/row.js';
import { SourceError } from '../../src/crm/source-error.js';
import { formatFromName, requestHeaders } from '../../src/crm/source.js';
import { displayUrl } from '../../src/crm/source-spec.js';
import { SourceSpecSchema } from '../../src/crm/source-spec.js';
import { loadJob } from '../../src/jobs/definition.js';
import { createLogger } from '../../src/log.js';

async function* gen(chunks: Uint8Array[]): AsyncGenerator<Uint8Array> {
  yield* chunks;
}

async function decodeAll(chunks: Uint8Array[], encoding?: string): Promise<string> {
  let text = '';
  const currentLine = () => 1 + (text.match(/\n/g)?.length ?? 0);
  for await (const d of decodeText(gen(chunks), { source: 'x.csv', encoding, currentLine }))
    text += d.text;
  return text;
}

async function decodeError(chunks: Uint8Array[], encoding?: string): Promise<SourceError> {
  const err = await decodeAll(chunks, encoding).then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof SourceError)) throw new Error(`expected a SourceError, got ${String(err)}`);
  return err;
}

type Parser = CsvParser | NdjsonParser | JsonArrayParser;
const csv = (): Parser => new CsvParser({ source: 'x.csv', maxFieldBytes: 1 << 20 });

/** Rows of `chunks` decoded and parsed as readRows does it, chunk by chunk. */
async function rowsOf(
  chunks: Uint8Array[],
  parser: Parser = csv(),
  encoding?: string,
): Promise<SourceRow[]> {
  const out: SourceRow[] = [];
  const currentLine = () => parser.line;
  for await (const d of decodeText(gen(chunks), { source: 'x.csv', encoding, currentLine }))
    parser.push(d.text, out, d.notUtf8);
  parser.end(out);
  return out;
}

/** `bytes` cut at the given offsets. */
function cut(bytes: Uint8Array, ...at: number[]): Uint8Array[] {
  const points = [0, ...at, bytes.length];
  return points.slice(1).map((p, k) => bytes.subarray(points[k], p));
}

/** `bytes` in chunks of `size` bytes. */
function chunked(bytes: Uint8Array, size: number): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let i = 0; i < bytes.length; i += size) out.push(bytes.subarray(i, i + size));
  return out;
}

const bytes = (...parts: (string | number[])[]): Buffer =>
  Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : Buffer.from(p))));

const problem = (offset: number): string =>
  `not UTF-8 at byte ${offset} of the export; set source.encoding if the export is Windows-1252`;

describe('decodeText', () => {
  it('strips a UTF-8 BOM and decodes characters split across chunks', async () => {
    const b = Buffer.from('\uFEFFname\nZürich €\n');
    expect(await decodeAll(chunked(b, 1))).toBe('name\nZürich €\n');
  });

  it('decodes UTF-16 LE and BE with a BOM, split at odd offsets', async () => {
    const le = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('a\tb\nÜ\t€\n', 'utf16le')]);
    expect(await decodeAll(cut(le, 3, 8))).toBe('a\tb\nÜ\t€\n');
    const be = Buffer.from(le.subarray(2)).swap16();
    expect(await decodeAll([Buffer.concat([Buffer.from([0xfe, 0xff]), be])])).toBe('a\tb\nÜ\t€\n');
  });

  it('decodes with source.encoding: é, € and smart quotes from Windows-1252', async () => {
    // "Café" 80 “Zürich” … , each byte a character of Windows-1252.
    const b = bytes('Caf', [0xe9, 0x20, 0x80, 0x20, 0x93], 'Z', [0xfc], 'rich', [0x94, 0x20, 0x85]);
    expect(await decodeAll(cut(b, 4), 'windows-1252')).toBe('Café € “Zürich” …');
    // latin1 and iso-8859-1 are labels of windows-1252 (as in browsers).
    expect(await decodeAll([b], 'latin1')).toBe('Café € “Zürich” …');
    // Bytes 80-9F are Windows-1252's characters under these labels too, not C1 controls.
    expect(await decodeAll([Uint8Array.of(0x80, 0x0a)], 'iso-8859-1')).toBe('€\n');
    // Every byte is a character of Windows-1252: nothing there fails to decode.
    const all = Uint8Array.from({ length: 255 }, (_, i) => i + 1);
    expect(await decodeAll([bytes('a\n'), all], 'windows-1252')).toHaveLength(257);
  });

  it('lets a byte-order mark win over source.encoding, and says so at debug level', async () => {
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk: Buffer, _enc, cb) {
        lines.push(chunk.toString());
        cb();
      },
    });
    const logger = createLogger({ level: 'debug', destination, pretty: false });
    const b = bytes([0xef, 0xbb, 0xbf], 'Café €\n');
    let text = '';
    for await (const d of decodeText(gen([b]), {
      source: 'x.csv',
      encoding: 'windows-1252',
      currentLine: () => 1,
      logger,
    }))
      text += d.text;
    expect(text).toBe('Café €\n');
    expect(lines.join('')).toContain('the byte-order mark overrides source.encoding');
    const le = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('Ü\n', 'utf16le')]);
    expect(await decodeAll([le], 'windows-1252')).toBe('Ü\n');
  });

  it('reads UTF-16 without a BOM when source.encoding says so', async () => {
    const b = Buffer.from('id\tname\n1\tMüller\n', 'utf16le');
    expect(await decodeAll([b], 'utf-16le')).toBe('id\tname\n1\tMüller\n');
  });

  it('ends the read, naming the line, when bytes do not decode in a labelled encoding', async () => {
    // 0x81 0x20 is no Shift_JIS character.
    const err = await decodeError([bytes('a,b\n1,2\n3,', [0x81, 0x20], '\n')], 'shift_jis');
    expect(err.code).toBe('source.encoding');
    expect(err.line).toBe(3);
    expect(err.message).toBe(
      'x.csv line 3: bytes that do not decode as shift_jis; is source.encoding right?',
    );
  });

  it('refuses empty input, binary data, zip archives and UTF-16 without a BOM', async () => {
    expect((await decodeError([])).code).toBe('source.empty');
    expect((await decodeError([Buffer.from([0xef, 0xbb, 0xbf])])).code).toBe('source.empty');
    expect((await decodeError([Buffer.from([1, 2, 0, 0, 0xff, 7, 0, 9, 0, 0, 3])])).code).toBe(
      'source.not-text',
    );
    // Binary data is not text whatever the label.
    expect(
      (await decodeError([Buffer.from([1, 2, 0, 0, 0xff, 7, 0, 9, 0, 0, 3])], 'windows-1252')).code,
    ).toBe('source.not-text');
    expect(notTextReason(Buffer.from('PK\x03\x04rest', 'latin1'))).toContain('zip archive');
    const err = await decodeError([Buffer.from('id\tname\n1\tAcme\n', 'utf16le')]);
    expect(err.code).toBe('source.encoding');
    expect(err.message).toContain(
      'UTF-16 LE without a byte-order mark; set source.encoding to utf-16le',
    );
  });

  it('knows the encodings of BOMs and of WHATWG labels', () => {
    expect(bomEncoding(Uint8Array.of(0xff, 0xfe, 0x41, 0))).toBe('utf-16le');
    expect(bomEncoding(Uint8Array.of(0xfe, 0xff, 0, 0x41))).toBe('utf-16be');
    expect(bomEncoding(Uint8Array.of(0xef, 0xbb, 0xbf, 0x41))).toBe('utf-8');
    expect(bomEncoding(Uint8Array.of(0x41))).toBeUndefined();
    expect(encodingName('Latin1')).toBe('windows-1252');
    expect(encodingName('cp1252')).toBe('windows-1252');
    expect(encodingName('ascii')).toBe('windows-1252');
    expect(encodingName('UTF-16BE')).toBe('utf-16be');
    expect(encodingName('Shift_JIS')).toBe('shift_jis');
    expect(encodingName('utf8')).toBe('utf-8');
    expect(encodingName('windows-1253x')).toBeUndefined();
    expect(encodingName('auto')).toBe('auto');
    expect(encodingName(' Auto ')).toBe('auto');
    // WHATWG's "replacement" decodes anything to one U+FFFD: not an encoding to read with.
    expect(encodingName('iso-2022-kr')).toBeUndefined();
  });

  it('validates source.encoding when a job file is loaded, naming the label', () => {
    const dir = mkdtempSync(join(tmpdir(), 'crm-sync-encoding-'));
    try {
      const job = (encoding: string) =>
        writeFileSync(
          join(dir, 'accounts.yaml'),
          `entity: companies\nmapping: salesforce-accounts\nsource: { path: a.csv, encoding: ${encoding} }\n`,
        );
      job('windows-1252');
      expect(loadJob(dir, 'accounts').source.encoding).toBe('windows-1252');
      job('auto');
      expect(loadJob(dir, 'accounts').source.encoding).toBe('auto');
      job('cp-1252');
      expect(() => loadJob(dir, 'accounts')).toThrow(
        `${join(dir, 'accounts.yaml')}: source.encoding: unknown encoding "cp-1252"`,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('validates source.encoding in a source spec, naming the label', () => {
    expect(SourceSpecSchema.safeParse({ path: 'a.csv', encoding: 'windows-1252' }).success).toBe(
      true,
    );
    const r = SourceSpecSchema.safeParse({ path: 'a.csv', encoding: 'win-1252' });
    expect(r.success).toBe(false);
    expect(r.error?.issues.map((i) => [i.path.join('.'), i.message])).toEqual([
      [
        'encoding',
        'unknown encoding "win-1252": give auto or a label such as utf-8, windows-1252, iso-8859-1, utf-16le or shift_jis',
      ],
    ]);
  });
});

describe('rows with bytes that are not UTF-8, with encoding utf-8', () => {
  const strict = (chunks: Uint8Array[], parser: Parser = csv()) => rowsOf(chunks, parser, 'utf-8');
  const file = bytes(
    'Name,City\n', // bytes 0-9
    'Acme,Springfield\n', // 10-26
    'Caf',
    [0xe9], // byte 30: é in Windows-1252
    ' Noir,Paris\n',
    '"Initech\nnew ',
    [0x93], // byte 56, on the 2nd line of a quoted field
    'town',
    [0x94],
    '",Austin\n',
    'Globex,Cypress\n',
  );
  const expected: SourceRow[] = [
    { line: 2, record: { Name: 'Acme', City: 'Springfield' } },
    { line: 3, problem: problem(30) },
    { line: 4, problem: problem(56) },
    { line: 6, record: { Name: 'Globex', City: 'Cypress' } },
  ];

  it('cost their row, even inside a quoted field that spans lines; the other rows keep their lines', async () => {
    expect(await strict([file])).toEqual(expected);
  });

  it('however the bytes are cut into chunks', async () => {
    for (const size of [1, 2, 3, 5, 7, 16])
      expect(await strict(chunked(file, size)), `size ${size}`).toEqual(expected);
    // The bad byte as the last byte of a chunk, and as the first.
    expect(await strict(cut(file, 31))).toEqual(expected);
    expect(await strict(cut(file, 30))).toEqual(expected);
  });

  it('cost the row when the bad sequence is split across chunks', async () => {
    // "€" cut short (e2 82) before a comma: one bad sequence over the chunk boundary.
    const b = bytes('Name,City\n', 'Zur', [0xe2], [0x82], ',Bern\nBasel,Basel\n');
    expect(await strict(cut(b, 14))).toEqual([
      { line: 2, problem: problem(13) },
      { line: 3, record: { Name: 'Basel', City: 'Basel' } },
    ]);
  });

  it('leave a 3-byte character split across chunks alone', async () => {
    const b = bytes('Name,Price\n', 'Acme,10 €\n');
    const at = b.indexOf(0xe2);
    for (const chunks of [cut(b, at + 1), cut(b, at + 2), cut(b, at + 1, at + 2)]) {
      expect(await strict(chunks)).toEqual([{ line: 2, record: { Name: 'Acme', Price: '10 €' } }]);
    }
  });

  it('cost the last row when the file ends inside a character', async () => {
    const b = bytes('Name,City\nAcme,Springfield\nGlobex,Cypr', [0xe2, 0x82]);
    expect(await strict(chunked(b, 4))).toEqual([
      { line: 2, record: { Name: 'Acme', City: 'Springfield' } },
      { line: 3, problem: problem(38) },
    ]);
  });

  it('are read as the label says with source.encoding', async () => {
    expect(await rowsOf(chunked(file, 5), csv(), 'windows-1252')).toEqual([
      { line: 2, record: { Name: 'Acme', City: 'Springfield' } },
      { line: 3, record: { Name: 'Café Noir', City: 'Paris' } },
      { line: 4, record: { Name: 'Initech\nnew “town”', City: 'Austin' } },
      { line: 6, record: { Name: 'Globex', City: 'Cypress' } },
    ]);
  });

  it('in the header end the read: without names no row can be read', async () => {
    const err = await strict([bytes('Name,Stra', [0xdf], 'e\nAcme,Main\n')]).then(
      () => undefined,
      (e: unknown) => e as SourceError,
    );
    expect(err).toBeInstanceOf(SourceError);
    expect(err?.code).toBe('source.encoding');
    expect(err?.message).toBe(`x.csv line 1: header: ${problem(9)}`);
  });

  it('cost their NDJSON line', async () => {
    const b = bytes('{"a":"x"}\n{"a":"', [0xe9], '"}\n{"a":"y"}\n');
    for (const size of [1, 3, 64]) {
      expect(await strict(chunked(b, size), new NdjsonParser({ maxRecordBytes: 1 << 20 }))).toEqual(
        [
          { line: 1, record: { a: 'x' } },
          { line: 2, problem: problem(16) },
          { line: 3, record: { a: 'y' } },
        ],
      );
    }
  });

  it('cost their JSON record, even when all records share one line', async () => {
    const b = bytes('{"results":[{"a":"x"},{"a":"', [0xe9], '"},{"a":"y"}],"paging":{}}');
    const json = () => new JsonArrayParser({ source: 'x.json', maxRecordBytes: 1 << 20 });
    for (const size of [1, 3, 64]) {
      expect(await strict(chunked(b, size), json())).toEqual([
        { line: 1, record: { a: 'x' } },
        { line: 1, problem: problem(28) },
        { line: 1, record: { a: 'y' } },
      ]);
    }
    // Outside the records, they break the export itself.
    const outside = bytes('{"results":[{"a":"x"}],"paging":{"n":"', [0xe9], '"}}');
    const err = await strict([outside], json()).then(
      () => undefined,
      (e: unknown) => e as SourceError,
    );
    expect(err?.code).toBe('source.encoding');
    expect(err?.message).toBe(
      'x.json: not UTF-8 at byte 38 of the export, outside the records; set source.encoding if the export is Windows-1252',
    );
  });
});

/** `text` as Windows-1252 writes it: one byte per character (the characters of these tests). */
function latin1(text: string): Buffer {
  const cp1252: Record<string, number> = { '€': 0x80, '“': 0x93, '”': 0x94, '–': 0x96 };
  return Buffer.from(
    Array.from(text, (c) => {
      const code = cp1252[c] ?? c.charCodeAt(0);
      if (code > 0xff) throw new Error(`no Windows-1252 byte for ${c}`);
      return code;
    }),
  );
}

const warned = (offset: number): string =>
  `decoded as windows-1252: not UTF-8 at byte ${offset} of the export`;

describe('encoding auto (the default): each row as UTF-8 when it is, else as Windows-1252', () => {
  // A UTF-8 export with Latin-1 rows in it, as one export appended to another gives.
  const head = bytes('Id,FirstName,LastName\n'); // bytes 0-21
  const utf8Row = bytes('1,Zoë,Müller € 😀\n'); // 22-
  const latin1Row = latin1('2,Françoise,Peña “Jr”\n');
  // A quoted cell over two lines: the first line is plain Windows-1252, the
  // second holds "Â®", bytes C3 AE that happen to be valid UTF-8 ("®"): the
  // row is not UTF-8, so the whole row, both lines, reads as Windows-1252.
  const twoLines = latin1('3,"Ren\u00e9e\nÃ®",Ødegård\n');
  const utf8Again = bytes('4,Ã©,"Nuñez\nJr"\n');
  const file = Buffer.concat([head, utf8Row, latin1Row, twoLines, utf8Again]);
  const latin1At = head.length + utf8Row.length;
  const twoLinesAt = latin1At + latin1Row.length;
  const expected: SourceRow[] = [
    { line: 2, record: { Id: '1', FirstName: 'Zoë', LastName: 'Müller € 😀' } },
    {
      line: 3,
      record: { Id: '2', FirstName: 'Françoise', LastName: 'Peña “Jr”' },
      warning: warned(latin1At + '2,Fran'.length),
    },
    {
      line: 4,
      record: { Id: '3', FirstName: 'Renée\nÃ®', LastName: 'Ødegård' },
      warning: warned(twoLinesAt + '3,"Ren'.length),
    },
    // Valid UTF-8 that looks like Latin-1 read as UTF-8 ("Ã©" is é's bytes seen as Latin-1): kept as written.
    { line: 6, record: { Id: '4', FirstName: 'Ã©', LastName: 'Nuñez\nJr' } },
  ];

  it('reads UTF-8 rows exactly and Latin-1 rows whole as Windows-1252, each with a warning', async () => {
    expect(await rowsOf([file])).toEqual(expected);
    expect(await rowsOf([file], csv(), 'auto')).toEqual(expected);
    expect(await rowsOf([file], csv(), 'AUTO')).toEqual(expected);
  });

  it('however the bytes are cut into chunks', async () => {
    for (const size of [1, 2, 3, 5, 7, 16, 64])
      expect(await rowsOf(chunked(file, size)), `size ${size}`).toEqual(expected);
  });

  it('reads a whole Latin-1 export, its header too', async () => {
    const b = latin1('Id;Prénom;Nom\r\n1;Françoise;Müller\r\n2;José;Peña\r\n3;Ann;Lee\r\n');
    expect(await rowsOf(chunked(b, 4))).toEqual([
      {
        line: 2,
        record: { Id: '1', Prénom: 'Françoise', Nom: 'Müller' },
        warning: warned('Id;Prénom;Nom\r\n1;Fran'.length),
      },
      {
        line: 3,
        record: { Id: '2', Prénom: 'José', Nom: 'Peña' },
        warning: warned('Id;Prénom;Nom\r\n1;Françoise;Müller\r\n2;Jos'.length),
      },
      { line: 4, record: { Id: '3', Prénom: 'Ann', Nom: 'Lee' } },
    ]);
  });

  it('reads mojibake as written in a Latin-1 row, as UTF-8 when it is all the row holds', async () => {
    // "Ã©" in Latin-1 is C3 A9, which is also é in UTF-8.
    const b = latin1('Name,City\nRenÃ©e,Zürich\nRenÃ©e,Paris\n');
    expect(await rowsOf([b])).toEqual([
      {
        line: 2,
        record: { Name: 'RenÃ©e', City: 'Zürich' },
        warning: warned('Name,City\nRenÃ©e,Z'.length),
      },
      { line: 3, record: { Name: 'Renée', City: 'Paris' } },
    ]);
    expect(await rowsOf([b], csv(), 'windows-1252')).toEqual([
      { line: 2, record: { Name: 'RenÃ©e', City: 'Zürich' } },
      { line: 3, record: { Name: 'RenÃ©e', City: 'Paris' } },
    ]);
  });

  it('a UTF-8 byte-order mark wins: rows that are not UTF-8 cost their row', async () => {
    const b = Buffer.concat([
      bytes([0xef, 0xbb, 0xbf], 'Name\n'),
      latin1('Peña\n'),
      bytes('Zoë\n'),
    ]);
    expect(await rowsOf([b])).toEqual([
      { line: 2, problem: problem(3 + 'Name\nPe'.length) },
      { line: 3, record: { Name: 'Zoë' } },
    ]);
  });

  it('reads an NDJSON line, and a JSON record sharing its line with UTF-8 ones, as Windows-1252', async () => {
    const nd = Buffer.concat([
      bytes('{"a":"Zoë"}\n'),
      latin1('{"a":"Peña €"}\n'),
      bytes('{"a":"€"}\n'),
    ]);
    for (const size of [1, 3, 64]) {
      expect(
        await rowsOf(chunked(nd, size), new NdjsonParser({ maxRecordBytes: 1 << 20 })),
      ).toEqual([
        { line: 1, record: { a: 'Zoë' } },
        {
          line: 2,
          record: { a: 'Peña €' },
          warning: warned(Buffer.byteLength('{"a":"Zoë"}\n{"a":"Pe')),
        },
        { line: 3, record: { a: '€' } },
      ]);
    }
    const js = Buffer.concat([
      bytes('{"results":[{"a":"Zoë"},'),
      latin1('{"a":"Peña"}'),
      bytes(',{"a":"Müller"}]}'),
    ]);
    const json = () => new JsonArrayParser({ source: 'x.json', maxRecordBytes: 1 << 20 });
    for (const size of [1, 3, 64]) {
      expect(await rowsOf(chunked(js, size), json())).toEqual([
        { line: 1, record: { a: 'Zoë' } },
        {
          line: 1,
          record: { a: 'Peña' },
          warning: warned(Buffer.byteLength('{"results":[{"a":"Zoë"},{"a":"Pe')),
        },
        { line: 1, record: { a: 'Müller' } },
      ]);
    }
  });
});

describe('source naming, formats and headers', () => {
  it('shows a URL without credentials or query', () => {
    expect(displayUrl('https://u:p@crm.example/x/export.csv?sig=abc#f')).toBe(
      'https://crm.example/x/export.csv?…',
    );
  });

  it('takes the format from the extension, through .gz', () => {
    expect(formatFromName({ path: 'a/b.CSV' })).toBe('csv');
    expect(formatFromName({ path: 'b.tsv.gz' })).toBe('csv');
    expect(formatFromName({ path: 'b.jsonl' })).toBe('ndjson');
    expect(formatFromName({ url: 'http://h/owners.json?x=1' })).toBe('json');
    expect(formatFromName({ path: 'export' })).toBeUndefined();
  });

  it('sniffs JSON vs NDJSON vs CSV from the first text', () => {
    expect(sniffFormat('\n [{"a":1}]', false)).toBe('json');
    expect(sniffFormat('{"a":1}\n{"a":2}\n', false)).toBe('ndjson');
    expect(sniffFormat('{\n "results": []\n}', false)).toBe('json');
    expect(sniffFormat('{"results": [{"a": 1}], "paging": {}}', true)).toBe('json');
    expect(sniffFormat('{"a":1}', false)).toBeUndefined();
    expect(sniffFormat('{"a":1}', true)).toBe('ndjson');
    expect(sniffFormat('Record ID,Name\n', false)).toBe('csv');
  });

  it('builds request headers from the environment and expands ${VAR}', () => {
    const env = { CRM_SOURCE_AUTHORIZATION: 'Bearer env-token', HUB_TOKEN: 'hub-secret' };
    expect(
      requestHeaders(
        { url: 'http://h/x', headers: { 'X-Api-Key': '${HUB_TOKEN}', Accept: 'text/csv' } },
        env,
      ),
    ).toEqual({ authorization: 'Bearer env-token', 'x-api-key': 'hub-secret', accept: 'text/csv' });
    expect(() =>
      requestHeaders({ url: 'http://h/x', headers: { A: '${MISSING_VAR}' } }, {}),
    ).toThrow(/MISSING_VAR, which is not set/);
  });

  it('normalises header names', () => {
    expect(
      normaliseHeader(['\uFEFFRecord ID', ' A ', '', 'A', 'A (2)', 'A']).map((c) => [
        c.name,
        c.index,
      ]),
    ).toEqual([
      ['Record ID', 0],
      ['A', 1],
      ['A (3)', 3],
      ['A (2)', 4],
      ['A (4)', 5],
    ]);
  });
});
