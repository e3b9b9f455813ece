/**
 * How long redis-server spends in one call, over a stretch of a benchmark:
 * what one deployment's Lua scripts cost every other deployment on the same
 * primary, which runs one command at a time (docs/SCALING.md). Started on a
 * private redis-server only (it resets the server's statistics and sets the
 * percentiles it reports); on a shared one (REDIS_URL) it reads nothing.
 *
 * Read from INFO commandstats (script calls, EVALSHA and EVAL, and their
 * mean time) and INFO latencystats (Redis 7's per-command histograms: the
 * 99.9th and 100th percentiles, the longest call of each command, commands
 * run inside a script included; a script's own call is at least as long).
 */
import { Redis } from 'ioredis';

const SCRIPTS = ['evalsha', 'eval'];

export interface CommandTime {
  /** Script calls (EVALSHA + EVAL), and their mean µs. */
  scriptCalls: number;
  scriptMeanUs: number;
  /** 99.9% of script calls took at most this (µs); NaN before Redis 7. */
  scriptP999Us: number;
  /** The longest call of any command (µs; NaN before Redis 7), and its command. */
  longestUs: number;
  longestCommand: string;
  /**
   * The longest call of any other command, those a script runs included (µs):
   * one HGET or HSETNX on a bucket of at most 512 entries does microseconds of
   * work, so milliseconds here are redis-server waiting for a core.
   */
  longestSingleUs: number;
  longestSingleCommand: string;
}

export interface CommandClock {
  /** Since the clock started; undefined on a shared Redis. */
  read(): Promise<CommandTime | undefined>;
}

async function withRedis<T>(url: string, f: (r: Redis) => Promise<T>): Promise<T> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await redis.connect();
  try {
    return await f(redis);
  } finally {
    redis.disconnect();
  }
}

/** `latency_percentiles_usec_<command>:p50=…,p99.9=…,p100=…` lines, by command. */
export function latencyPercentiles(info: string): Map<string, Map<string, number>> {
  const out = new Map<string, Map<string, number>>();
  for (const m of info.matchAll(/^latency_percentiles_usec_([^:]+):(.*)$/gm)) {
    const ps = new Map<string, number>();
    for (const part of m[2]!.trim().split(',')) {
      const [p, v] = part.split('=');
      if (p !== undefined && v !== undefined) ps.set(p, Number(v));
    }
    out.set(m[1]!, ps);
  }
  return out;
}

/** Starts the clock: zeroes the server's command statistics. */
export async function startCommandClock(url: string, shared: boolean): Promise<CommandClock> {
  if (shared) return { read: async () => undefined };
  await withRedis(url, async (r) => {
    // Redis 7 only; an older server leaves the percentiles out (NaN below).
    await r.config('SET', 'latency-tracking-info-percentiles', '50 99 99.9 100').catch(() => 0);
    await r.config('RESETSTAT');
  });
  return {
    read: () =>
      withRedis(url, async (r) => {
        const stats = await r.info('commandstats');
        let calls = 0;
        let usec = 0;
        for (const cmd of SCRIPTS) {
          const m = new RegExp(`^cmdstat_${cmd}:calls=(\\d+),usec=(\\d+)`, 'm').exec(stats);
          calls += Number(m?.[1] ?? 0);
          usec += Number(m?.[2] ?? 0);
        }
        const latency = latencyPercentiles(await r.info('latencystats').catch(() => ''));
        const p999 = SCRIPTS.map((c) => latency.get(c)?.get('p99.9')).filter(
          (x): x is number => x !== undefined && Number.isFinite(x),
        );
        const longest = (which: (cmd: string) => boolean): [number, string] => {
          let us = NaN;
          let name = '-';
          for (const [cmd, ps] of latency) {
            const max = ps.get('p100') ?? NaN;
            if (which(cmd) && Number.isFinite(max) && !(max <= us)) [us, name] = [max, cmd];
          }
          return [us, name];
        };
        const [longestUs, longestCommand] = longest(() => true);
        const [longestSingleUs, longestSingleCommand] = longest((c) => !SCRIPTS.includes(c));
        return {
          scriptCalls: calls,
          scriptMeanUs: calls === 0 ? NaN : usec / calls,
          scriptP999Us: p999.length === 0 ? NaN : Math.max(...p999),
          longestUs,
          longestCommand,
          longestSingleUs,
          longestSingleCommand,
        };
      }),
  };
}

/**
 * "4,012 script calls, 812 µs mean, 2.1 ms at 99.9%; longest 4.2 ms (evalsha), of one other
 * command 0.1 ms (hget)", or why not measured.
 */
export function describeTime(t: CommandTime | undefined): string {
  if (t === undefined) return 'n/a (shared Redis)';
  const ms = (us: number): string =>
    !Number.isFinite(us)
      ? 'n/a'
      : us < 1000
        ? `${Math.round(us)} µs`
        : `${(us / 1000).toFixed(1)} ms`;
  return `${t.scriptCalls.toLocaleString('en-US')} script calls, ${Number.isFinite(t.scriptMeanUs) ? Math.round(t.scriptMeanUs) : 'n/a'} µs mean, ${ms(t.scriptP999Us)} at 99.9%; longest ${ms(t.longestUs)} (${t.longestCommand}), of one other command ${ms(t.longestSingleUs)} (${t.longestSingleCommand})`;
}
