/**
 * CPU cost of mapping a source row: the generated HubSpot companies export
 * (bench/crm-data.ts) read with `readRows`, and read and mapped with the
 * `hubspot-companies` preset, in CPU µs per row (process.cpuUsage, user +
 * system; the median of 5 passes after a warm-up pass). A digest of every
 * map result is printed too, so that a change meant to keep the output can be
 * checked against the figures taken before it.
 *
 *   npx tsx bench/lib/map-cost.ts [rows] [formats]
 *
 * rows defaults to 100000; formats to `csv,ndjson` (`json` is the API shape:
 * `{id, properties: {…}}`, read through paths).
 */
import { createHash } from 'node:crypto';
import { ensureData, type DataFormat } from '../crm-data.js';
import { loadMapping } from '../../src/crm/presets.js';
import { readRows } from '../../src/crm/read.js';
import type { CompiledMapping } from '../../src/crm/mapped.js';
import { median } from './measure.js';

const PASSES = 5;

function cpuMicros(): number {
  const u = process.cpuUsage();
  return u.user + u.system;
}

/** One pass over the export: rows read, and the CPU µs it took. */
async function pass(
  path: string,
  mapping: CompiledMapping | null,
  digest?: (s: string) => void,
): Promise<{ rows: number; cpu: number }> {
  let rows = 0;
  let sink = 0;
  const start = cpuMicros();
  for await (const batch of readRows({ path })) {
    for (const row of batch) {
      rows++;
      if (mapping === null) continue;
      const r = mapping.map(row);
      if (r.ok) sink++;
      if (digest) digest(JSON.stringify(r));
    }
  }
  const cpu = cpuMicros() - start;
  if (sink < 0) console.log(sink);
  return { rows, cpu };
}

async function measure(path: string, mapping: CompiledMapping | null): Promise<number> {
  await pass(path, mapping);
  const perRow: number[] = [];
  for (let i = 0; i < PASSES; i++) {
    const { rows, cpu } = await pass(path, mapping);
    perRow.push(cpu / rows);
  }
  return median(perRow);
}

async function main(): Promise<void> {
  const rows = Number(process.argv[2] ?? 100_000);
  const formats = (process.argv[3] ?? 'csv,ndjson').split(',') as DataFormat[];
  const mapping = loadMapping('hubspot-companies');
  console.log(`rows ${rows}, median of ${PASSES} passes after a warm-up, CPU µs per row`);
  for (const format of formats) {
    const path = await ensureData(format, rows);
    const hash = createHash('sha256');
    const { rows: n } = await pass(path, mapping, (s) => hash.update(s).update('\n'));
    const read = await measure(path, null);
    const both = await measure(path, mapping);
    console.log(
      `${format.padEnd(7)} read ${read.toFixed(2).padStart(6)}  read+map ${both
        .toFixed(2)
        .padStart(6)}  map ${(both - read).toFixed(2).padStart(6)}  ` +
        `(${n} rows, results ${hash.digest('hex').slice(0, 16)})`,
    );
  }
}

await main();
