/**
 * `npm run bench [-- NAME ...]`: runs the benchmark scenarios in
 * bench/scenarios/ (all, or those named) and prints one markdown table per
 * scenario, with the machine it ran on. Figures go to docs/BENCHMARKS.md by
 * hand, with the command that produced them. Arguments starting with `-`
 * are left to the scenarios (`check --strict`).
 */
import { readdirSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export interface BenchTable {
  title: string;
  columns: string[];
  rows: (string | number)[][];
  notes?: string[];
}

export interface Scenario {
  name: string;
  description: string;
  run(): Promise<BenchTable[]>;
}

/**
 * A scenario's short form, for `npm run bench -- check` (bench/scenarios/check.ts):
 * its figures by metric name (the `metric` of a target in bench/targets.json),
 * measured in a few minutes at most, at sizes of its own (not the scenario's
 * BENCH_* size settings).
 */
export interface ShortForm {
  /** What it runs, in a few words (printed beside its figures). */
  what: string;
  measure(): Promise<Record<string, number>>;
}

function formatTable(t: BenchTable): string {
  const lines = [
    `### ${t.title}`,
    '',
    `| ${t.columns.join(' | ')} |`,
    `|${t.columns.map(() => '---').join('|')}|`,
  ];
  for (const r of t.rows) lines.push(`| ${r.map(String).join(' | ')} |`);
  if (t.notes?.length) lines.push('', ...t.notes.map((n) => `- ${n}`));
  return lines.join('\n');
}

async function main(): Promise<void> {
  const here = dirname(fileURLToPath(import.meta.url));
  const wanted = process.argv.slice(2).filter((a) => !a.startsWith('-'));
  const files = readdirSync(join(here, 'scenarios'))
    .filter((f) => f.endsWith('.ts'))
    .sort();
  const cpu = cpus()[0]?.model ?? 'unknown cpu';
  console.log(
    `machine: ${cpus().length} x ${cpu}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, node ${process.version}\n`,
  );
  let ran = 0;
  for (const f of files) {
    const mod = (await import(pathToFileURL(join(here, 'scenarios', f)).href)) as {
      default: Scenario;
    };
    const s = mod.default;
    if (wanted.length > 0 && !wanted.includes(s.name)) continue;
    ran++;
    console.log(`## ${s.name}: ${s.description}\n`);
    for (const table of await s.run()) console.log(`${formatTable(table)}\n`);
  }
  if (ran === 0) {
    console.error(
      `no scenario named ${wanted.join(', ')}; have: ${files.map((f) => f.replace(/\.ts$/, '')).join(', ')}`,
    );
    process.exitCode = 2;
  }
}

await main();
