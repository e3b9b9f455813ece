/**
 * Secrets never reach Redis: after runs that read an export over HTTP with a
 * bearer token and a signed query, and write with the platform API key, no
 * value under the prefix (run records, failures, queue jobs, state) holds
 * any of them; nor does the error of a run whose export was refused.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  API_KEY,
  companyRows,
  HUBSPOT_HEADER,
  hubspotCells,
  useEngines,
} from '../harness/engine.js';

const engines = useEngines();
const TOKEN = 'export-token-5f0c2b7e9a';
const SIG = 'sig-9d1e77aa04';
const csv = [HUBSPOT_HEADER, ...companyRows(25).map(hubspotCells)]
  .map((r) => r.join(','))
  .join('\n');

// The worker reads the job's `${VAR}` references from the environment its config was loaded from.
const engine = () =>
  engines({ env: { ENGINE_TEST_EXPORT_TOKEN: TOKEN, ENGINE_TEST_EXPORT_SIG: SIG } });

let server: Server;
let base = '';
beforeAll(async () => {
  server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const ok =
      req.headers.authorization === `Bearer ${TOKEN}` && url.searchParams.get('sig') === SIG;
    if (!ok || url.pathname !== '/companies.csv') {
      res.writeHead(403).end('forbidden');
      return;
    }
    res.writeHead(200, { 'Content-Type': 'text/csv' }).end(csv);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

function urlJob(path: string): Record<string, unknown> {
  return {
    entity: 'companies',
    source: {
      url: `${base}${path}?sig=\${ENGINE_TEST_EXPORT_SIG}`,
      format: 'csv',
      headers: { Authorization: 'Bearer ${ENGINE_TEST_EXPORT_TOKEN}' },
    },
    mapping: 'hubspot-companies',
  };
}

describe('engine: secrets stay out of Redis', () => {
  it('syncs from an authenticated export URL without storing its token, signature or the API key', async () => {
    const h = await engine();
    h.writeJob('companies', urlJob('/companies.csv'));
    const run = await h.runJob('companies');
    expect(run.error).toBeUndefined();
    expect(run.counts).toMatchObject({ read: 25, created: 25 });
    const text = await h.redisText();
    expect(text).toContain(run.id);
    for (const secret of [TOKEN, SIG, API_KEY]) expect(text).not.toContain(secret);
  });

  it('fails a run whose export is refused, naming the status but no secret', async () => {
    const h = await engine();
    h.writeJob('companies', urlJob('/missing.csv'));
    const run = await h.runJob('companies');
    expect(run.status).toBe('failed');
    expect(run.error).toMatch(/403/);
    const text = await h.redisText();
    for (const secret of [TOKEN, SIG, API_KEY]) expect(text).not.toContain(secret);
  });

  it('refuses a --source URL that carries a credential in its query, before enqueueing', async () => {
    const h = await engine();
    h.writeJob('companies', urlJob('/companies.csv'));
    await expect(
      h.enqueue('companies', { source: `${base}/companies.csv?sig=${SIG}` }),
    ).rejects.toThrow(/query parameter sig looks like a credential/);
    expect(await h.redisText()).not.toContain(SIG);

    // The same URL with the signature as a reference is read with the worker's environment.
    const run = await h.runJob('companies', {
      source: `${base}/companies.csv?sig=\${ENGINE_TEST_EXPORT_SIG}`,
    });
    expect(run.counts).toMatchObject({ read: 25, created: 25 });
    expect(await h.redisText()).not.toContain(SIG);
  });
});
