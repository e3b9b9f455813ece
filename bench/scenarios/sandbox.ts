/**
 * Sandbox throughput: the built CLI (`node dist/cli.js sandbox`, in its own
 * process, no knobs) driven from this process over keep-alive connections.
 * Two mixes: GET /companies/{id} only, and 80% GET / 20% POST /companies.
 * Each is run 3 times for a fixed duration, alternating; the table gives the median and
 * its ratio to the 5,000 requests/s target.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { createInterface } from 'node:readline';
import type { BenchTable, Scenario } from '../run.js';

const KEY = 'bench-key';
const TARGET = 5000;
const CONCURRENCY = 32;
const DURATION_MS = 3000;
const SEEDED = 200;

function call(
  agent: Agent,
  base: URL,
  method: string,
  path: string,
  body?: string,
): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        agent,
        host: base.hostname,
        port: base.port,
        method,
        path,
        headers: {
          Authorization: KEY,
          ...(body !== undefined && {
            'Content-Type': 'application/json',
            'Content-Length': Buffer.byteLength(body),
          }),
        },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function drive(
  agent: Agent,
  base: URL,
  writeShare: number,
  durationMs = DURATION_MS,
): Promise<{ rps: number; errors: number }> {
  let done = 0;
  let errors = 0;
  let n = 0;
  const end = performance.now() + durationMs;
  const worker = async (): Promise<void> => {
    while (performance.now() < end) {
      const i = n++;
      // Deterministic mix: every 5th request is a write when writeShare is 0.2.
      const write = writeShare > 0 && i % Math.round(1 / writeShare) === 0;
      const status = write
        ? await call(
            agent,
            base,
            'POST',
            '/companies',
            JSON.stringify({ name: `Bench ${i}`, external_id: `b-${i}` }),
          )
        : await call(agent, base, 'GET', `/companies/${(i % SEEDED) + 1}`);
      if (status >= 300) errors++;
      done++;
    }
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return { rps: done / ((performance.now() - t0) / 1000), errors };
}

/**
 * CPU seconds the sandbox process has used (Linux /proc), so that capacity can
 * be given per CPU-second: on a shared, loaded machine the wall-clock rate
 * says more about the neighbours than about the sandbox.
 */
function cpuSeconds(pid: number | undefined): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime are fields 14 and 15 of stat, in clock ticks (100/s on Linux).
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return undefined;
  }
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const scenario: Scenario = {
  name: 'sandbox',
  description: 'requests/s the sandbox CLI serves on loopback with no fault knobs (target 5,000)',
  async run(): Promise<BenchTable[]> {
    const child = spawn(
      process.execPath,
      ['dist/cli.js', 'sandbox', '--port', '0', '--api-key', KEY],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    try {
      const url = await new Promise<string>((resolve, reject) => {
        createInterface({ input: child.stdout! }).on('line', (line) => {
          const m = /(http:\/\/\S+)/.exec(line);
          if (m) resolve(m[1]!);
        });
        child.on('exit', (code) => reject(new Error(`sandbox exited with ${code}`)));
      });
      const base = new URL(url);
      const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
      for (let i = 0; i < SEEDED; i++) {
        await call(agent, base, 'POST', '/companies', JSON.stringify({ name: `Seed ${i}` }));
      }
      // Warm-up, not measured: lets both processes' JITs settle.
      await drive(agent, base, 0.2, 3000);
      const mixes = [
        {
          label: 'GET /companies/{id}',
          share: 0,
          runs: [] as number[],
          perCpu: [] as number[],
          clientPerCpu: [] as number[],
          errors: 0,
        },
        {
          label: '80% GET /companies/{id}, 20% POST /companies',
          share: 0.2,
          runs: [] as number[],
          perCpu: [] as number[],
          clientPerCpu: [] as number[],
          errors: 0,
        },
      ];
      // Runs alternate between the mixes, so that a slow spell of the shared
      // machine does not land on one mix only.
      for (let r = 0; r < 3; r++) {
        for (const mix of mixes) {
          const cpu0 = cpuSeconds(child.pid);
          const own0 = process.cpuUsage();
          const t0 = performance.now();
          const res = await drive(agent, base, mix.share);
          const cpu1 = cpuSeconds(child.pid);
          const own = process.cpuUsage(own0);
          mix.clientPerCpu.push(
            (res.rps * ((performance.now() - t0) / 1000)) / ((own.user + own.system) / 1e6),
          );
          mix.runs.push(res.rps);
          if (cpu0 !== undefined && cpu1 !== undefined && cpu1 > cpu0) {
            mix.perCpu.push((res.rps * ((performance.now() - t0) / 1000)) / (cpu1 - cpu0));
          }
          mix.errors += res.errors;
        }
      }
      const rows = mixes.map((mix) => {
        const m = median(mix.runs);
        return [
          mix.label,
          mix.runs.map((x) => x.toFixed(0)).join(' / '),
          m.toFixed(0),
          `${(m / TARGET).toFixed(2)}x`,
          mix.perCpu.length === 3 ? median(mix.perCpu).toFixed(0) : 'n/a',
          median(mix.clientPerCpu).toFixed(0),
          mix.errors,
        ];
      });
      agent.destroy();
      return [
        {
          title: 'Sandbox throughput (no knobs, loopback, keep-alive)',
          columns: [
            'mix',
            'runs (req/s)',
            'median req/s',
            'vs 5,000 req/s',
            'median req per sandbox CPU-second',
            'median req per client CPU-second',
            'non-2xx',
          ],
          rows,
          notes: [
            `${CONCURRENCY} concurrent keep-alive connections from the bench process, ${DURATION_MS / 1000} s per run after a 3 s warm-up, the mixes alternating, sandbox in its own process`,
            'client and server share the machine: the wall-clock rate is a floor for the sandbox alone; requests per CPU-second of the sandbox process (from /proc) is its capacity on one core',
          ],
        },
      ];
    } finally {
      child.kill('SIGTERM');
    }
  },
};

export default scenario;
