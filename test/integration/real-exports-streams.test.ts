/**
 * A preset on its CRM's records as an Airbyte or Singer source connector
 * writes them: the HubSpot API v3 answer, wrapped as Airbyte protocol
 * messages, as bare Airbyte records and as Singer messages (with LOG, TRACE,
 * STATE, SCHEMA and ACTIVATE_VERSION lines and another stream between), syncs
 * to the very platform the unwrapped answer gave: every record unchanged,
 * nothing written, the second run too. Real Airbyte output of HubSpot
 * companies syncs with the same preset.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countWrites, statsSince, type Dump } from '../harness/engine.js';
import {
  REAL,
  expectOnPlatform,
  failureLines,
  jsonRecords,
  syncTwice,
  useRealEngine,
} from './real-exports-harness.js';

const engine = useRealEngine();
const dir = mkdtempSync(join(tmpdir(), 'crm-sync-streams-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

type Rec = Record<string, unknown>;
const companies = jsonRecords('hubspot/companies-api-v3.json', 'results');

/** One message a line, a few of another kind after each record. */
function write(name: string, record: (c: Rec, i: number) => Rec, between: Rec[]): string {
  const lines = companies.flatMap((c, i) => [record(c, i), between[i % between.length]!]);
  const path = join(dir, name);
  writeFileSync(path, `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`);
  return path;
}

const wrapped = {
  'Airbyte protocol messages': write(
    'airbyte-protocol.jsonl',
    (c, i) => ({
      type: 'RECORD',
      record: { stream: 'companies', data: c, emitted_at: 1_700_000_000_000 + i },
    }),
    [
      { type: 'LOG', log: { level: 'INFO', message: 'Read 1 records from companies stream' } },
      { type: 'RECORD', record: { stream: 'contacts', data: { id: '1' }, emitted_at: 1 } },
      { type: 'TRACE', trace: { type: 'STREAM_STATUS', emitted_at: 1 } },
      {
        type: 'STATE',
        state: { type: 'STREAM', stream: { stream_descriptor: { name: 'companies' } } },
      },
    ],
  ),
  'bare Airbyte records': write(
    'airbyte-records.jsonl',
    (c, i) => ({ stream: 'companies', data: c, emitted_at: 1_700_000_000_000 + i }),
    [{ stream: 'contact_lists', data: { listId: 166 }, emitted_at: 1 }],
  ),
  'Singer messages': write(
    'singer.ndjson',
    (c) => ({
      type: 'RECORD',
      stream: 'companies',
      record: c,
      time_extracted: '2026-01-01T00:00:00Z',
    }),
    [
      { type: 'SCHEMA', stream: 'companies', schema: { type: 'object' }, key_properties: ['id'] },
      { type: 'STATE', value: { bookmarks: { companies: { updatedAt: '2026-01-01T00:00:00Z' } } } },
      { type: 'ACTIVATE_VERSION', stream: 'companies', version: 1 },
      { type: 'RECORD', stream: 'owners', record: { id: '1' } },
    ],
  ),
};

describe('a preset on Airbyte and Singer output', () => {
  let api: Dump;
  beforeAll(async () => {
    const h = engine();
    const { first, failures } = await syncTwice(h, {
      job: 'hubspot-companies-api',
      preset: 'hubspot-companies',
      entity: 'companies',
      file: 'hubspot/companies-api-v3.json',
    });
    expect(first.counts).toMatchObject({ read: 57, created: 57, invalid: 0, skipped: 0 });
    expect(failureLines(failures)).toEqual([]);
    api = await h.dump();
  });

  for (const [what, file] of Object.entries(wrapped)) {
    it(`${what}: the same records as the API answer, nothing written`, async () => {
      const h = engine();
      const before = await h.stats();
      const job = `hubspot-companies-${what.toLowerCase().replaceAll(' ', '-')}`;
      const { first, failures } = await syncTwice(h, {
        job,
        preset: 'hubspot-companies',
        entity: 'companies',
        file,
        stream: 'companies',
      });
      expect(first.counts).toMatchObject({
        read: 57,
        created: 0,
        updated: 0,
        unchanged: 57,
        invalid: 0,
        skipped: 0,
      });
      expect(failureLines(failures)).toEqual([]);
      expect(countWrites(statsSince(before, await h.stats()))).toBe(0);
      expect(await h.dump()).toEqual(api);
    });
  }

  it('real Airbyte output of HubSpot companies: the companies stream synced, the others passed over', async () => {
    const h = engine();
    const lines = readFileSync(join(REAL, 'airbyte', 'hubspot-expected-records.jsonl'), 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as { stream: string; data: Rec });
    const live = lines.filter((l) => l.stream === 'companies').map((l) => l.data);
    expect(live).toHaveLength(3);
    const { first, failures } = await syncTwice(h, {
      job: 'hubspot-companies-airbyte',
      preset: 'hubspot-companies',
      entity: 'companies',
      file: 'airbyte/hubspot-expected-records.jsonl',
      stream: 'companies',
    });
    expect(first.counts).toMatchObject({ read: 3, created: 3, invalid: 0, skipped: 0 });
    expect(failureLines(failures)).toEqual([]);
    await expectOnPlatform(
      h,
      'companies',
      live.map((r) => ({
        external_id: `hubspot:company:${String(r.id)}`,
        crm_company_id: Number(r.id),
        name: (r.properties as Rec).name,
      })),
    );
  });

  it('a line where recordPath finds nothing: an invalid row naming its line', async () => {
    const h = engine();
    const path = join(dir, 'one-broken.jsonl');
    const lines = companies
      .slice(0, 3)
      .map((c) => JSON.stringify({ stream: 'companies', data: c }));
    lines.splice(1, 0, JSON.stringify({ stream: 'companies', record: companies[3] }));
    writeFileSync(path, lines.join('\n'));
    h.writeJob('hubspot-companies-broken', {
      entity: 'companies',
      source: { path, recordPath: 'data' },
      mapping: 'hubspot-companies',
      thresholds: { minRows: 0, maxInvalidShare: 0.5 },
    });
    const run = await h.runJob('hubspot-companies-broken');
    expect(run.status, run.error).toBe('completed');
    expect(run.counts).toMatchObject({ read: 4, invalid: 1, unchanged: 3 });
    expect(await h.failures(run.id)).toEqual([
      expect.objectContaining({
        line: 2,
        kind: 'invalid',
        reason: 'recordPath "data" found nothing: no data in the record (keys: stream, record)',
      }),
    ]);
  });
});
