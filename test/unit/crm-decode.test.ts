import { describe, expect, it } from 'vitest';
import {
  decodeText,
  detectEncoding,
  firstInvalidUtf8,
  notTextReason,
} from '../../src/crm/decode.js';
import { normaliseHeader } from '../../src/crm/headers.js';
import { sniffFormat } from '../../src/crm/read.js';
import { SourceError } from '../../src/crm/source-error.js';
import { displayUrl, formatFromName, requestHeaders } from '../../src/crm/source.js';

async function decodeAll(chunks: Uint8Array[]): Promise<string> {
  async function* gen(): AsyncGenerator<Uint8Array> {
    yield* chunks;
  }
  let text = '';
  for await (const t of decodeText(gen(), 'x.csv', () => 1 + (text.match(/\n/g)?.length ?? 0)))
    text += t;
  return text;
}

async function decodeError(chunks: Uint8Array[]): Promise<SourceError> {
  const err = await decodeAll(chunks).then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof SourceError)) throw new Error(`expected a SourceError, got ${String(err)}`);
  return err;
}

describe('decodeText', () => {
  it('strips a UTF-8 BOM and decodes characters split across chunks', async () => {
    const bytes = Buffer.from('\uFEFFname\nZürich €\n');
    const chunks = Array.from(bytes, (b) => Uint8Array.of(b));
    expect(await decodeAll(chunks)).toBe('name\nZürich €\n');
  });

  it('decodes UTF-16 LE and BE with a BOM, split at odd offsets', async () => {
    const le = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('a\tb\nÜ\t€\n', 'utf16le')]);
    expect(await decodeAll([le.subarray(0, 3), le.subarray(3, 8), le.subarray(8)])).toBe(
      'a\tb\nÜ\t€\n',
    );
    const be = Buffer.from(le.subarray(2)).swap16();
    expect(await decodeAll([Buffer.concat([Buffer.from([0xfe, 0xff]), be])])).toBe('a\tb\nÜ\t€\n');
  });

  it('names the line of invalid UTF-8', async () => {
    const err = await decodeError([
      Buffer.from('a,b\n1,2\n'),
      Buffer.from([0x33, 0x2c, 0xe9, 0x0a]),
    ]);
    expect(err.code).toBe('source.encoding');
    expect(err.line).toBe(3);
    expect(err.message).toMatch(/^x\.csv line 3: invalid UTF-8/);
  });

  it('refuses empty input, binary data, zip archives and UTF-16 without a BOM', async () => {
    expect((await decodeError([])).code).toBe('source.empty');
    expect((await decodeError([Buffer.from([0xef, 0xbb, 0xbf])])).code).toBe('source.empty');
    expect((await decodeError([Buffer.from([1, 2, 0, 0, 0xff, 7, 0, 9, 0, 0, 3])])).code).toBe(
      'source.not-text',
    );
    expect(notTextReason(Buffer.from('PK\x03\x04rest', 'latin1'))).toContain('zip archive');
    const err = await decodeError([Buffer.from('id\tname\n1\tAcme\n', 'utf16le')]);
    expect(err.code).toBe('source.encoding');
    expect(err.message).toContain('UTF-16 LE without a byte-order mark');
  });

  it('detects encodings from the BOM and finds the first invalid UTF-8 byte', () => {
    expect(detectEncoding(Uint8Array.of(0xff, 0xfe, 0x41, 0))).toBe('utf-16le');
    expect(detectEncoding(Uint8Array.of(0xfe, 0xff, 0, 0x41))).toBe('utf-16be');
    expect(detectEncoding(Uint8Array.of(0x41))).toBe('utf-8');
    expect(firstInvalidUtf8(Buffer.from('ab€c'))).toBe(6);
    expect(firstInvalidUtf8(Uint8Array.of(0x82, 0xac, 0x41, 0xff))).toBe(3);
    expect(firstInvalidUtf8(Uint8Array.of(0x41, 0xe2, 0x82))).toBe(3);
    expect(firstInvalidUtf8(Uint8Array.of(0x41, 0xe2, 0x41))).toBe(1);
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
