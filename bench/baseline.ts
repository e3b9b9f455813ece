/**
 * The naive baseline the sync benchmarks compare against: what a user would
 * write by hand. A sequential loop over the export (csv-parse), each row
 * mapped by hand and sent with got, retried with p-retry on 429 and 5xx
 * (honouring Retry-After). No state and no diff: a first sync POSTs every
 * row; a re-sync PUTs every row to the id the first one got back.
 *
 * It is bounded in time (`budgetMs`): at one request in flight it manages
 * about 1/L requests per second, so a full 20,000-row sync would take many
 * minutes; the rate measured over the budget and the wall time it projects
 * for the whole export are reported as such.
 */
import { createReadStream } from 'node:fs';
import { parse } from 'csv-parse';
import got, { HTTPError } from 'got';
import pRetry, { AbortError } from 'p-retry';

export interface BaselineOptions {
  baseUrl: string;
  apiKey: string;
  /** The export (a HubSpot companies CSV). */
  path: string;
  /** Rows of the export, to project the wall time of the whole. */
  totalRows: number;
  /** Stop after this long (ms). */
  budgetMs: number;
  /** A re-sync: PUT each row to the id in this map (external id → platform id), skip rows not in it. */
  ids?: ReadonlyMap<string, number>;
}

export interface BaselineResult {
  /** Rows sent and acknowledged. */
  sent: number;
  /** Requests, retries included. */
  requests: number;
  rateLimited: number;
  ms: number;
  /** Acknowledged writes per second. */
  rate: number;
  /** Wall time the whole export would take at that rate. */
  projectedMs: number;
  /** External id → platform id of the records created (a first sync). */
  ids: Map<string, number>;
}

type Row = Record<string, string>;

/** The row → body mapping a user would write for the HubSpot export. */
function body(row: Row): Record<string, unknown> {
  const id = Number(row['Record ID']);
  const domain = (row['Company Domain Name'] || row['Website URL'] || '').trim();
  return {
    crm_company_id: id,
    external_id: `hubspot:company:${id}`,
    name: (row['Company name'] ?? '').trim(),
    website: domain ? (domain.startsWith('http') ? domain : `https://${domain}`) : null,
    custom: JSON.stringify({
      industry: row['Industry'] || undefined,
      employees: row['Number of Employees'] ? Number(row['Number of Employees']) : undefined,
      annual_revenue: row['Annual Revenue'] || undefined,
      phone: row['Phone Number'] || undefined,
      city: row['City'] || undefined,
      region: row['State/Region'] || undefined,
      country: row['Country/Region'] || undefined,
      owner: row['Company owner'] || undefined,
    }),
  };
}

export async function runBaseline(opts: BaselineOptions): Promise<BaselineResult> {
  const api = got.extend({
    prefixUrl: opts.baseUrl,
    // The platform takes the key as the whole Authorization header.
    headers: { authorization: opts.apiKey },
    responseType: 'json',
    retry: { limit: 0 },
    timeout: { request: 30_000 },
  });
  const ids = new Map<string, number>();
  let sent = 0;
  let requests = 0;
  let rateLimited = 0;
  const t0 = performance.now();
  const rows = createReadStream(opts.path).pipe(parse({ columns: true, bom: true }));
  for await (const row of rows as AsyncIterable<Row>) {
    if (performance.now() - t0 > opts.budgetMs) break;
    const b = body(row);
    const externalId = b.external_id as string;
    const existing = opts.ids?.get(externalId);
    if (opts.ids && existing === undefined) continue;
    const record = await pRetry(
      async () => {
        requests++;
        const req =
          existing === undefined
            ? api.post('companies', { json: b })
            : api.put(`companies/${existing}`, { json: b });
        return (await req.json()) as { id: number };
      },
      {
        retries: 10,
        minTimeout: 100,
        onFailedAttempt: async ({ error }) => {
          if (!(error instanceof HTTPError)) return;
          const status = error.response.statusCode;
          if (status === 429) {
            rateLimited++;
            const after = Number(error.response.headers['retry-after'] ?? 1);
            await new Promise((r) => setTimeout(r, after * 1000));
          } else if (status < 500) {
            throw new AbortError(error);
          }
        },
      },
    );
    sent++;
    if (existing === undefined) ids.set(externalId, record.id);
  }
  rows.destroy();
  const ms = performance.now() - t0;
  const rate = sent / (ms / 1000);
  return {
    sent,
    requests,
    rateLimited,
    ms,
    rate,
    projectedMs: (opts.totalRows / rate) * 1000,
    ids,
  };
}
