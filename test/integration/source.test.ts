import { createServer, type Server } from 'node:http';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redactSecrets } from '../../src/log.js';
import { readRows } from '../../src/crm/read.js';
import { readAll, readError } from './source-helpers.js';

const FIX = 'test/fixtures/sources';

describe('readRows on real exports', () => {
  it('HubSpot UI export: BOM, quoted commas and newlines, lines where rows start', async () => {
    let header: string[] = [];
    const rows = await readAll(
      { path: `${FIX}/hubspot-companies.csv` },
      { onHeader: (h) => (header = h) },
    );
    expect(header[0]).toBe('Record ID');
    expect(header).toHaveLength(13);
    expect(rows.map((r) => r.line)).toEqual([2, 4, 5, 8]);
    expect(rows[0]).toEqual({
      line: 2,
      record: expect.objectContaining({
        'Record ID': '5120000001',
        'Company name': 'Acme, Inc.',
        Description: 'Makers of "everything"\nSince 1949',
      }) as unknown,
    });
    expect(rows[2]).toMatchObject({
      line: 5,
      record: { 'Website URL': ' initech.com ', Description: 'Line one\nLine two\nLine three' },
    });
    expect(rows[3]).toMatchObject({
      line: 8,
      record: { 'Annual Revenue': 'N/A', Description: '#N/A' },
    });
  });

  it('Salesforce Data Loader export: CRLF and capital headers kept as written', async () => {
    const rows = await readAll({ path: `${FIX}/salesforce-accounts.csv` });
    expect(rows).toHaveLength(3);
    expect(rows[1]).toEqual({
      line: 3,
      record: expect.objectContaining({
        ID: '001M000000qfPyTIAU',
        NAME: 'Burlington Textiles Corp of America',
        WEBSITE: 'www.burlington.com',
        CREATEDDATE: '2011-01-10T00:00:00.000Z',
      }) as unknown,
    });
    expect(JSON.stringify(rows)).not.toContain('\\r');
  });

  it('Excel "Unicode text": UTF-16 LE with BOM, tab-separated', async () => {
    expect(await readAll({ path: `${FIX}/excel-unicode.txt` })).toEqual([
      { line: 2, record: { 'Account Name': 'Müller GmbH', Website: 'mueller.de', City: 'Zürich' } },
      {
        line: 3,
        record: {
          'Account Name': 'Société Générale',
          Website: 'societegenerale.fr',
          City: 'Paris',
        },
      },
      { line: 4, record: { 'Account Name': '東京商事', Website: 'tokyo-shoji.jp', City: '東京' } },
    ]);
  });

  it('a ;-separated file, detected, with decimal commas intact', async () => {
    expect(await readAll({ path: `${FIX}/semicolon.csv` })).toEqual([
      { line: 2, record: { Name: 'Acme', Website: 'acme.com', 'Annual Revenue': '1.000.000,50' } },
      { line: 3, record: { Name: 'Dupont; Fils', Website: 'dupont.fr', 'Annual Revenue': '12,5' } },
    ]);
  });

  it('HubSpot owners as NDJSON', async () => {
    const rows = await readAll({ path: `${FIX}/hubspot-owners.ndjson` });
    expect(rows.map((r) => r.line)).toEqual([1, 3]);
    expect(rows[1]).toMatchObject({
      record: { id: '41629780', email: 'bob@acme.com', userId: 9586505 },
    });
  });

  it('HubSpot API JSON: the results array, past the paging object', async () => {
    const rows = await readAll({ path: `${FIX}/hubspot-companies-api.json` });
    expect(rows.map((r) => r.line)).toEqual([9, 21]);
    expect(rows[1]).toMatchObject({
      record: { id: '513', properties: { name: 'Globex "West"', domain: 'globex.com' } },
    });
  });

  it('gzip by magic bytes: a .csv.gz, and a gzip file with a plain .csv name', async () => {
    const expected = [
      { line: 2, record: { Name: 'Acme', Website: 'acme.com' } },
      { line: 3, record: { Name: 'Globex', Website: 'globex.com' } },
    ];
    expect(await readAll({ path: `${FIX}/companies.csv.gz` })).toEqual(expected);
    const dir = mkdtempSync(join(tmpdir(), 'crm-sync-source-'));
    try {
      copyFileSync(`${FIX}/companies.csv.gz`, join(dir, 'companies.csv'));
      expect(await readAll({ path: join(dir, 'companies.csv') })).toEqual(expected);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('sniffs the format of a file without a telling extension', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'crm-sync-source-'));
    try {
      copyFileSync(`${FIX}/hubspot-owners.ndjson`, join(dir, 'owners.export'));
      copyFileSync(`${FIX}/hubspot-companies-api.json`, join(dir, 'companies.export'));
      expect(await readAll({ path: join(dir, 'owners.export') })).toHaveLength(2);
      expect((await readAll({ path: join(dir, 'companies.export') })).map((r) => r.line)).toEqual([
        9, 21,
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('yields batches of batchSize and stops cleanly when the consumer breaks', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'crm-sync-source-'));
    try {
      const path = join(dir, 'many.csv');
      const lines = ['id,name'];
      for (let i = 0; i < 2500; i++) lines.push(`${i},name ${i}`);
      const { writeFileSync } = await import('node:fs');
      writeFileSync(path, lines.join('\n'));
      const sizes: number[] = [];
      for await (const batch of readRows({ path }, { batchSize: 1000 })) sizes.push(batch.length);
      expect(sizes).toEqual([1000, 1000, 500]);
      for await (const batch of readRows({ path }, { batchSize: 10 })) {
        expect(batch[0]).toEqual({ line: 2, record: { id: '0', name: 'name 0' } });
        break;
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('readRows over HTTP', () => {
  let server: Server;
  let base = '';
  const seen: { url: string; auth: string | undefined; key: string | undefined }[] = [];
  const csv = readFileSync(`${FIX}/hubspot-companies.csv`);
  const gz = readFileSync(`${FIX}/companies.csv.gz`);

  beforeAll(async () => {
    server = createServer((req, res) => {
      seen.push({
        url: req.url ?? '',
        auth: req.headers.authorization,
        key: req.headers['x-api-key'] as string | undefined,
      });
      if (req.url?.startsWith('/companies.csv')) res.end(csv);
      else if (req.url === '/export') res.end(gz);
      else if (req.url === '/api') res.end(readFileSync(`${FIX}/hubspot-companies-api.json`));
      else {
        res.statusCode = 404;
        res.end('{"detail": "not found"}');
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('streams a CSV URL with the Authorization header from the environment and spec headers', async () => {
    const rows = await readAll(
      { url: `${base}/companies.csv?token=abc`, headers: { 'X-Api-Key': '${TEST_CRM_KEY}' } },
      { env: { CRM_SOURCE_AUTHORIZATION: 'Bearer from-env', TEST_CRM_KEY: 'key-from-env' } },
    );
    expect(rows).toHaveLength(4);
    expect(seen.at(-1)).toEqual({
      url: '/companies.csv?token=abc',
      auth: 'Bearer from-env',
      key: 'key-from-env',
    });
  });

  it('reads credentials from the environment it is given, never from process.env', async () => {
    const spec = { url: `${base}/companies.csv`, headers: { 'X-Api-Key': '${TEST_CRM_KEY}' } };
    process.env.CRM_SOURCE_AUTHORIZATION = 'Bearer of-the-process-3d';
    process.env.TEST_CRM_KEY = 'key-of-the-process-3d';
    try {
      expect(await readAll(spec, { env: { TEST_CRM_KEY: 'key-given-3d' } })).toHaveLength(4);
      expect(seen.at(-1)).toEqual({ url: '/companies.csv', auth: undefined, key: 'key-given-3d' });
      const requests = seen.length;
      const err = await readError(spec);
      expect(err.message).toBe(
        `${base}/companies.csv: header X-Api-Key names the environment variable TEST_CRM_KEY, which is not set`,
      );
      expect(seen).toHaveLength(requests);
    } finally {
      delete process.env.CRM_SOURCE_AUTHORIZATION;
      delete process.env.TEST_CRM_KEY;
    }
  });

  it('expands ${VAR} in the URL from the environment, and never shows the value', async () => {
    const rows = await readAll(
      { url: `${base}/companies.csv?token=\${TEST_QUERY_TOKEN}` },
      { env: { TEST_QUERY_TOKEN: 'q-secret-9931' } },
    );
    expect(rows).toHaveLength(4);
    expect(seen.at(-1)?.url).toBe('/companies.csv?token=q-secret-9931');
    expect(redactSecrets('token=q-secret-9931')).toBe('token=[REDACTED]');
    const err = await readError(
      { url: `${base}/nope.csv?token=\${TEST_QUERY_TOKEN}` },
      { env: {} },
    );
    expect(err.message).toBe(
      `${base}/nope.csv?…: the URL names the environment variable TEST_QUERY_TOKEN, which is not set`,
    );
  });

  it('registers the Authorization value as a secret: logs censor it', async () => {
    await readAll(
      { url: `${base}/companies.csv` },
      { env: { CRM_SOURCE_AUTHORIZATION: 'Bearer zz-secret-token-41' } },
    );
    expect(redactSecrets('sent Bearer zz-secret-token-41')).toBe('sent [REDACTED]');
  });

  it('stops with the abort reason when the signal fires mid-read', async () => {
    const controller = new AbortController();
    const rows: unknown[] = [];
    const reading = (async () => {
      for await (const batch of readRows(
        { url: `${base}/companies.csv` },
        { signal: controller.signal, batchSize: 1 },
      )) {
        rows.push(...batch);
        controller.abort(new Error('shutting down'));
      }
    })();
    await expect(reading).rejects.toThrow('shutting down');
    expect(rows).toHaveLength(1);
  });

  it('detects gzip and the format of a URL with no extension', async () => {
    expect(await readAll({ url: `${base}/export` })).toHaveLength(2);
    expect(await readAll({ url: `${base}/api` })).toHaveLength(2);
  });
});
