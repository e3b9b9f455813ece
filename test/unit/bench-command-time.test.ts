import { describe, expect, it } from 'vitest';
import { describeTime, latencyPercentiles } from '../../bench/lib/command-time.js';

describe('latencyPercentiles', () => {
  it('reads each command line of INFO latencystats, subcommands included', () => {
    const info = [
      '# Latencystats',
      'latency_percentiles_usec_evalsha:p50=1003.519,p99=5013.503,p99.9=110100.479,p100=306184.191',
      'latency_percentiles_usec_config|set:p50=25.087,p99=25.087,p99.9=25.087,p100=25.087',
      '',
    ].join('\r\n');
    const ps = latencyPercentiles(info);
    expect([...ps.keys()]).toEqual(['evalsha', 'config|set']);
    expect(ps.get('evalsha')?.get('p99.9')).toBe(110100.479);
    expect(ps.get('evalsha')?.get('p100')).toBe(306184.191);
    expect(ps.get('config|set')?.get('p50')).toBe(25.087);
  });

  it('gives nothing for a server without latency statistics', () => {
    expect(latencyPercentiles('# Latencystats\r\n').size).toBe(0);
  });
});

describe('describeTime', () => {
  it('prints calls, mean, tail and the longest calls, µs below a millisecond', () => {
    expect(
      describeTime({
        scriptCalls: 12_000,
        scriptMeanUs: 3056.4,
        scriptP999Us: 110_100,
        longestUs: 306_184,
        longestCommand: 'evalsha',
        longestSingleUs: 420,
        longestSingleCommand: 'hget',
      }),
    ).toBe(
      '12,000 script calls, 3056 µs mean, 110.1 ms at 99.9%; longest 306.2 ms (evalsha), of one other command 420 µs (hget)',
    );
    expect(describeTime(undefined)).toBe('n/a (shared Redis)');
  });
});
