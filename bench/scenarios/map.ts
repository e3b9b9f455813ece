/**
 * Mapping throughput: the hubspot-companies preset mapping and validating
 * 200,000 generated HubSpot-like rows (15 columns, as the CSV parser yields
 * them: header → string), in memory, so the figure is the mapping alone.
 * Median of 3 passes after a warm-up pass.
 */
import { CompanyRequest } from '../../src/platform/schemas.js';
import { compileMapping } from '../../src/crm/mapping.js';
import { findPreset, readYamlFile } from '../../src/crm/presets.js';
import type { SourceRow } from '../../src/crm/row.js';
import type { BenchTable, Scenario } from '../run.js';

const ROWS = 200_000;
const HEADER = [
  'Record ID',
  'Company name',
  'Company Domain Name',
  'Website URL',
  'Company owner',
  'Create Date',
  'Last Activity Date',
  'Phone Number',
  'City',
  'State/Region',
  'Country/Region',
  'Industry',
  'Number of Employees',
  'Annual Revenue',
  'Lifecycle Stage',
];

function generate(n: number): SourceRow[] {
  const rows: SourceRow[] = [];
  for (let i = 0; i < n; i++) {
    const id = String(100_000_000 + i * 7);
    const cells = [
      i % 50 === 0 ? `${id}.0` : id,
      i % 40 === 0 ? `  Company ${i}  ` : `Company ${i}`,
      i % 3 === 0 ? '' : `company${i}.example`,
      i % 3 === 0 ? `https://www.company${i}.example/` : '',
      'Jane Roe',
      '2024-02-01 09:30',
      '1/10/2026 21:52',
      i % 10 === 0 ? 'N/A' : `+1 555 ${String(i % 10_000).padStart(4, '0')}`,
      'Springfield',
      'IL',
      'United States',
      i % 7 === 0 ? '' : 'COMPUTER_SOFTWARE',
      String(10 + (i % 5_000)),
      String(1_000_000 + i),
      'customer',
    ];
    const record: Record<string, string> = {};
    for (let c = 0; c < HEADER.length; c++) record[HEADER[c]!] = cells[c]!;
    rows.push({ line: i + 2, record });
  }
  return rows;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/** Wall time and CPU time (user + system, all threads) of one pass. */
function timeIt(fn: () => number): { ms: number; cpuMs: number; count: number } {
  const c0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  const count = fn();
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  const c = process.cpuUsage(c0);
  return { ms, cpuMs: (c.user + c.system) / 1000, count };
}

interface Step {
  label: string;
  count: number;
  prepare?: () => void;
  pass: () => number;
}

export default {
  name: 'map',
  description: `hubspot-companies preset: map + validate ${ROWS.toLocaleString('en')} in-memory rows of 15 columns`,
  async run(): Promise<BenchTable[]> {
    const rows = generate(ROWS);
    const def = readYamlFile(findPreset('hubspot-companies')!).value;
    const mapping = compileMapping(def);
    const verified = compileMapping(def, { verifyWithSchema: true });
    // Built only for the last step, so the heap is the rows alone while mapping is timed.
    let bodies: unknown[] = [];
    const count = (fn: (r: SourceRow) => boolean) => () => {
      let ok = 0;
      for (const r of rows) if (fn(r)) ok++;
      return ok;
    };
    const steps: Step[] = [
      {
        label: 'map + validate (preset hubspot-companies)',
        count: ROWS,
        pass: count((r) => mapping.map(r).ok),
      },
      {
        label: 'map + validate + zod parse of each body (verifyWithSchema)',
        count: ROWS,
        pass: count((r) => verified.map(r).ok),
      },
      {
        label: 'zod CompanyRequest.safeParse alone, on the mapped bodies',
        count: ROWS,
        prepare: () => {
          bodies = rows.map((r) => mapping.map(r)).flatMap((r) => (r.ok ? [r.body] : []));
        },
        pass: () => {
          let ok = 0;
          for (const b of bodies) if (CompanyRequest.safeParse(b).success) ok++;
          return ok;
        },
      },
    ];
    const fmt = (x: number) => Math.round(x).toLocaleString('en');
    const table: (string | number)[][] = [];
    let valid = 0;
    for (const step of steps) {
      step.prepare?.();
      const wall: number[] = [];
      const cpu: number[] = [];
      for (let pass = 0; pass < 4; pass++) {
        const t = timeIt(step.pass);
        valid = t.count;
        if (pass === 0) continue; // warm-up: the JIT compiles the closures
        wall.push(step.count / (t.ms / 1000));
        cpu.push(step.count / (t.cpuMs / 1000));
      }
      const w = median(wall);
      table.push([
        step.label,
        fmt(w),
        wall.map(fmt).join(' / '),
        fmt(median(cpu)),
        (1e6 / w).toFixed(2),
      ]);
    }
    return [
      {
        title: `Mapping throughput (${ROWS.toLocaleString('en')} rows, ${valid.toLocaleString('en')} valid; median of 3 after a warm-up)`,
        columns: [
          'step',
          'rows/s wall (median)',
          'passes (rows/s wall)',
          'rows/s per CPU-second (median)',
          'µs/row wall',
        ],
        rows: table,
        notes: [
          'Rows are generated in memory (no parsing, no I/O); one thread (CPU time counts GC helper threads too).',
          "The default path checks each field by hand with the platform schema's rules; the second row adds a zod parse of every body; the third is that parse alone.",
        ],
      },
    ];
  },
} satisfies Scenario;
