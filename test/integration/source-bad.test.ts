/**
 * The bad-input corpus (test/fixtures/bad/): every broken export yields a
 * clear SourceError naming the file (and the line, where one applies) or
 * problem rows with their lines, and none crashes or hangs (each read runs
 * under a 10 s abort signal).
 */
import { createServer, type Server } from 'node:http';
import { createWriteStream, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../harness/redis-server.js';
import type { SourceSpec } from '../../src/crm/source-spec.js';
import { readRows } from '../../src/crm/read.js';
import { readAll, readError } from './source-helpers.js';

const BAD = 'test/fixtures/bad';

interface Case {
  file: string;
  spec?: Partial<SourceSpec>;
  code: string;
  line?: number;
  says: string | RegExp;
}

const failing: Case[] = [
  {
    file: 'unterminated-quote.csv',
    code: 'source.csv',
    line: 3,
    says: 'unterminated quoted field',
  },
  {
    file: 'wrong-delimiter.csv',
    spec: { delimiter: ',' },
    code: 'source.delimiter',
    line: 1,
    says: 'probably ";"',
  },
  { file: 'binary-garbage.csv', code: 'source.not-text', says: 'not a text export' },
  { file: 'zip-archive.csv', code: 'source.not-text', says: 'zip archive' },
  { file: 'empty.csv', code: 'source.empty', says: 'empty export (0 bytes)' },
  { file: 'bom-only.csv', code: 'source.empty', says: 'empty export' },
  { file: 'blank-lines-only.csv', code: 'source.empty', says: 'only blank lines' },
  { file: 'truncated.csv.gz', code: 'source.gzip', says: 'truncated gzip' },
  { file: 'corrupt.csv.gz', code: 'source.gzip', says: 'corrupt gzip' },
  {
    file: 'utf16-no-bom.txt',
    code: 'source.encoding',
    says: 'UTF-16 LE without a byte-order mark',
  },
  { file: 'not-an-array.json', code: 'source.json', says: 'not an array of records' },
  { file: 'number.json', code: 'source.json', line: 1, says: 'the export is a number' },
  { file: 'truncated.json', code: 'source.json', line: 3, says: 'cut short' },
  { file: 'mismatched.json', code: 'source.json', line: 3, says: "unexpected ']'" },
  { file: 'trailing-comma.json', code: 'source.json', line: 1, says: 'trailing comma' },
  { file: 'no-such-file.csv', code: 'source.not-found', says: 'no such file' },
  { file: '', code: 'source.unreadable', says: 'is a directory' },
];

describe('bad exports that cannot be read', () => {
  it.each(failing)('$file: $code', async (c) => {
    const path = c.file === '' ? BAD : `${BAD}/${c.file}`;
    const err = await readError({ path, ...c.spec });
    expect(err.code).toBe(c.code);
    expect(err.line).toBe(c.line);
    expect(err.source).toBe(path);
    expect(
      err.message.startsWith(c.line === undefined ? `${path}: ` : `${path} line ${c.line}: `),
    ).toBe(true);
    if (typeof c.says === 'string') expect(err.message).toContain(c.says);
    else expect(err.message).toMatch(c.says);
  });
});

describe('bad rows in readable exports', () => {
  it('ragged rows are problem rows with their lines; the rest is read', async () => {
    expect(await readAll({ path: `${BAD}/ragged-rows.csv` })).toEqual([
      { line: 2, record: { Name: 'Acme', Website: 'acme.com', City: 'Springfield' } },
      { line: 3, problem: 'row has 2 fields, header has 3' },
      { line: 4, problem: 'row has 4 fields, header has 3' },
      { line: 5, record: { Name: 'Umbrella', Website: 'umbrella.example', City: 'Raccoon City' } },
    ]);
  });

  it('a row with a byte that is not UTF-8 is read as Windows-1252, with a warning naming the byte', async () => {
    expect(await readAll({ path: `${BAD}/invalid-utf8.csv` })).toEqual([
      { line: 2, record: { Name: 'Acme', City: 'Springfield' } },
      {
        line: 3,
        record: { Name: 'Café Noir', City: 'Paris' },
        warning: 'decoded as windows-1252: not UTF-8 at byte 30 of the export',
      },
      { line: 4, record: { Name: 'Globex', City: 'Cypress' } },
    ]);
  });

  it('with encoding utf-8, a row with a byte that is not UTF-8 is a problem row naming the byte; the rest is read', async () => {
    const utf8 = { encoding: 'utf-8' };
    expect(await readAll({ path: `${BAD}/invalid-utf8.csv`, ...utf8 })).toEqual([
      { line: 2, record: { Name: 'Acme', City: 'Springfield' } },
      {
        line: 3,
        problem:
          'not UTF-8 at byte 30 of the export; set source.encoding if the export is Windows-1252',
      },
      { line: 4, record: { Name: 'Globex', City: 'Cypress' } },
    ]);
    expect(
      await readAll({ path: `${BAD}/invalid-utf8.csv`, encoding: 'windows-1252' }),
    ).toContainEqual({ line: 3, record: { Name: 'Café Noir', City: 'Paris' } });
    // Gzipped, the byte is counted in the decompressed export.
    const dir = mkdtempSync(join(tmpdir(), 'crm-sync-bad-'));
    try {
      const path = join(dir, 'invalid-utf8.csv.gz');
      writeFileSync(path, gzipSync(readFileSync(`${BAD}/invalid-utf8.csv`)));
      expect(await readAll({ path, ...utf8 })).toContainEqual({
        line: 3,
        problem:
          'not UTF-8 at byte 30 of the export; set source.encoding if the export is Windows-1252',
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('an NDJSON line that is not valid JSON is a problem row', async () => {
    const rows = await readAll({ path: `${BAD}/bad-line.ndjson` });
    expect(rows.map((r) => ('problem' in r ? `${r.line}:problem` : `${r.line}:ok`))).toEqual([
      '1:ok',
      '2:problem',
      '3:ok',
    ]);
    expect(rows[1]).toMatchObject({ problem: expect.stringMatching(/^invalid JSON: /) as unknown });
  });

  it('a header-only file is zero rows', async () => {
    expect(await readAll({ path: `${BAD}/header-only.csv` })).toEqual([]);
  });

  it('duplicate and blank header names stay addressable', async () => {
    expect(await readAll({ path: `${BAD}/duplicate-header.csv` })).toEqual([
      {
        line: 2,
        record: {
          Email: 'ann@acme.com',
          'Associated Company IDs': '1',
          'Associated Company IDs (2)': '2',
          'Email (2)': 'ann@other.com',
        },
      },
    ]);
  });

  it('a 10 MB field is a problem row, read with bounded memory, and the file goes on', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'crm-sync-bad-'));
    try {
      const path = join(dir, 'huge-field.csv');
      const out = createWriteStream(path);
      out.write('Name,Notes\nAcme,"');
      const mb = 'x'.repeat(1024 * 1024);
      for (let i = 0; i < 10; i++) out.write(mb);
      out.write('"\nGlobex,');
      for (let i = 0; i < 10; i++) out.write(mb);
      out.write('\nInitech,short\n');
      await new Promise<void>((resolve, reject) =>
        out.end((err?: Error | null) => (err ? reject(err) : resolve())),
      );
      expect(await readAll({ path })).toEqual([
        { line: 2, problem: 'field 2 is larger than maxFieldBytes (1048576 bytes)' },
        { line: 3, problem: 'field 2 is larger than maxFieldBytes (1048576 bytes)' },
        { line: 4, record: { Name: 'Initech', Notes: 'short' } },
      ]);
      // A legitimate 180 KB cell passes under the default limit.
      const ok = join(dir, 'big-cell.csv');
      const w = createWriteStream(ok);
      w.end(`Name,Notes\nAcme,"${'y'.repeat(180 * 1024)}"\n`);
      await new Promise<void>((resolve) => w.on('close', () => resolve()));
      const rows = await readAll({ path: ok });
      expect(rows).toHaveLength(1);
      expect((rows[0] as { record: Record<string, string> }).record.Notes).toHaveLength(180 * 1024);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('bad URL sources', () => {
  let server: Server;
  let base = '';

  beforeAll(async () => {
    server = createServer((req, res) => {
      if (req.url === '/ok') {
        const lines = ['Name,Website'];
        for (let i = 0; i < 20_000; i++) lines.push(`Company ${i},company${i}.example`);
        res.end(`${lines.join('\n')}\n`);
      } else if (req.url === '/error') {
        res.statusCode = 503;
        res.end('busy');
      } else if (req.url === '/silent') {
        // Never answers: the response timeout must end the read.
      } else if (req.url === '/stall') {
        // Sends part of the body, then nothing, keeping the connection open.
        res.writeHead(200, { 'content-type': 'text/csv' });
        res.write('Name,Website\nAcme,acme.com\n');
      } else if (req.url === '/cut') {
        res.writeHead(200, { 'content-type': 'text/csv' });
        res.write('Name,Website\nAcme,acme.com\n');
        setTimeout(() => res.socket?.destroy(), 20);
      } else {
        res.statusCode = 404;
        res.end('{"detail": "Not found."}');
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('a 404 names the URL (without its query) and the status, not retryable', async () => {
    const err = await readError({ url: `${base}/missing.csv?api_key=s3cret-value` });
    expect(err.code).toBe('source.http-status');
    expect(err.statusCode).toBe(404);
    expect(err.retryable).toBe(false);
    expect(err.message).toBe(`${base}/missing.csv?…: GET answered HTTP 404 Not Found`);
    expect(JSON.stringify({ ...err, message: err.message })).not.toContain('s3cret');
  });

  it('a 503 is retryable', async () => {
    const err = await readError({ url: `${base}/error` });
    expect(err).toMatchObject({ code: 'source.http-status', statusCode: 503, retryable: true });
  });

  it('an unreachable URL (a closed port) is a retryable source.unreachable', async () => {
    const port = await freePort();
    const err = await readError({ url: `http://127.0.0.1:${port}/export.csv` });
    expect(err).toMatchObject({ code: 'source.unreachable', retryable: true });
    expect(err.message).toBe(`http://127.0.0.1:${port}/export.csv: cannot connect (ECONNREFUSED)`);
  });

  it('a server that never answers times out', async () => {
    const err = await readError({ url: `${base}/silent`, timeoutMs: 300 });
    expect(err).toMatchObject({ code: 'source.timeout', retryable: true });
    expect(err.message).toContain('no answer within 300 ms');
  });

  it('a download that stalls mid-body times out, naming how far it got', async () => {
    const err = await readError({ url: `${base}/stall`, format: 'csv', timeoutMs: 300 });
    expect(err).toMatchObject({ code: 'source.timeout', retryable: true });
    expect(err.message).toBe(
      `${base}/stall: the download stalled: no data for 300 ms after 27 bytes`,
    );
  });

  it('a slow consumer does not make a healthy download time out', async () => {
    let slow = 0;
    for await (const batch of readRows(
      { url: `${base}/ok`, format: 'csv', timeoutMs: 200 },
      { batchSize: 100 },
    )) {
      // Pauses longer than the timeout: the socket idles because we do, not the server.
      if (slow < 300) await new Promise((resolve) => setTimeout(resolve, 300));
      slow += batch.length;
    }
    expect(slow).toBe(20_000);
  });

  it('a download cut short is an error, not a short file', async () => {
    const err = await readError({ url: `${base}/cut`, format: 'csv' });
    expect(err.code).toBe('source.unreachable');
    expect(err.message).toContain('download interrupted');
  });

  it('credentials in the URL are refused and never shown', async () => {
    const err = await readError({ url: `http://user:hunter22-secret@127.0.0.1:1/x.csv` });
    expect(err.code).toBe('source.config');
    expect(err.message).toContain('must not carry credentials');
    expect(err.message).not.toContain('hunter22');
    expect(err.source).toBe('http://127.0.0.1:1/x.csv');
  });
});
