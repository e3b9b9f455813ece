/**
 * Issue 3's throughput target: parse + map + validate + hash of a generated
 * 15-column HubSpot-style companies CSV (200,000 rows, bench/.out/), through
 * the real `readRows`, the `hubspot-companies` preset (`loadMapping`),
 * `identityKeys` and `contentHash`, against csv-parse alone (streaming,
 * `columns: true`) on the same file. Interleaved rounds, median of 3 each
 * after a warm-up round, in one process on one core. Besides wall-clock
 * rates, rows per CPU-second of this process (the machine is shared).
 */
import { createReadStream, statSync } from 'node:fs';
import { parse } from 'csv-parse';
import type { BenchTable, Scenario } from '../run.js';
import { ensureData } from '../crm-data.js';
import { int, loadAverage, median, ratio } from '../lib/measure.js';
import { loadMapping } from '../../src/crm/presets.js';
import { readRows } from '../../src/crm/read.js';
import { contentHash } from '../../src/sync/hash.js';
import { identityKeys } from '../../src/sync/identity.js';

const ROWS = 200_000;
const ROUNDS = 3;
const TARGET = 50_000;

interface Pass {
  rows: number;
  /** Rows that made it to a hash (valid, with an identity). */
  hashed: number;
  wallMs: number;
  cpuMs: number;
}

async function timed(fn: () => Promise<{ rows: number; hashed: number }>): Promise<Pass> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const r = await fn();
  const wallMs = performance.now() - t0;
  const c = process.cpuUsage(c0);
  return { ...r, wallMs, cpuMs: (c.user + c.system) / 1000 };
}

/** What a run's planning pass does to each row before it asks Redis anything. */
async function pipeline(path: string): Promise<{ rows: number; hashed: number }> {
  const mapping = loadMapping('hubspot-companies');
  let rows = 0;
  let hashed = 0;
  // The sum keeps the hashes alive, so the work cannot be optimised away.
  let sink = 0;
  for await (const batch of readRows({ path })) {
    rows += batch.length;
    for (const row of batch) {
      const r = mapping.map(row);
      if (!r.ok) continue;
      const body = r.body as Record<string, unknown>;
      const keys = identityKeys('companies', body);
      if (keys.length === 0) continue;
      sink += contentHash(body, mapping.fingerprint).length;
      hashed++;
    }
  }
  if (sink === 0 && hashed > 0) throw new Error('no hash computed');
  return { rows, hashed };
}

async function csvParseAlone(path: string): Promise<{ rows: number; hashed: number }> {
  let rows = 0;
  const parser = createReadStream(path).pipe(parse({ columns: true, bom: true }));
  for await (const _record of parser) rows++;
  return { rows, hashed: 0 };
}

const scenario: Scenario = {
  name: 'pipeline',
  description: `parse + map + validate + hash of a ${ROWS.toLocaleString('en-US')}-row, 15-column HubSpot CSV against csv-parse alone (median of ${ROUNDS})`,
  async run(): Promise<BenchTable[]> {
    const path = await ensureData('csv', ROWS);
    const mb = statSync(path).size / 2 ** 20;
    const load0 = await loadAverage();
    const ours: Pass[] = [];
    const theirs: Pass[] = [];
    for (let round = 0; round <= ROUNDS; round++) {
      const a = await timed(() => pipeline(path));
      const b = await timed(() => csvParseAlone(path));
      if (a.rows !== ROWS || b.rows !== ROWS)
        throw new Error(`row counts differ: pipeline ${a.rows}, csv-parse ${b.rows}`);
      if (a.hashed !== ROWS) throw new Error(`only ${a.hashed} of ${ROWS} rows were hashed`);
      // Round 0 warms the file cache and the JIT.
      if (round === 0) continue;
      ours.push(a);
      theirs.push(b);
    }
    const rate = (p: Pass): number => p.rows / (p.wallMs / 1000);
    const cpuRate = (p: Pass): number => p.rows / (p.cpuMs / 1000);
    const oursRate = median(ours.map(rate));
    const theirsRate = median(theirs.map(rate));
    const oursCpu = median(ours.map(cpuRate));
    const theirsCpu = median(theirs.map(cpuRate));
    const load1 = await loadAverage();
    return [
      {
        title: `Parse + map + validate + hash, ${int(ROWS)} rows, ${mb.toFixed(1)} MB CSV (one process)`,
        columns: [
          'pipeline',
          'rows/s (median)',
          'rounds (rows/s)',
          'vs 50,000 rows/s',
          'vs csv-parse',
          'rows per CPU-s (median)',
          'vs csv-parse (CPU)',
          'median ms',
        ],
        rows: [
          [
            'readRows + hubspot-companies preset + identityKeys + contentHash',
            int(oursRate),
            ours.map((p) => int(rate(p))).join(' / '),
            ratio(oursRate / TARGET),
            ratio(oursRate / theirsRate),
            int(oursCpu),
            ratio(oursCpu / theirsCpu),
            int(median(ours.map((p) => p.wallMs))),
          ],
          [
            'csv-parse alone (streaming, columns: true)',
            int(theirsRate),
            theirs.map((p) => int(rate(p))).join(' / '),
            ratio(theirsRate / TARGET),
            '1.00',
            int(theirsCpu),
            '1.00',
            int(median(theirs.map((p) => p.wallMs))),
          ],
        ],
        notes: [
          'Targets (issue 3): at least 50,000 rows/s on one core, and at least 0.5x the speed of csv-parse alone on the same file.',
          'Interleaved rounds after one warm-up round; CPU time counts GC helper threads too.',
          `Load average (1 min) before → after: ${load0} → ${load1}, on 2 shared cores.`,
        ],
      },
    ];
  },
};

export default scenario;
