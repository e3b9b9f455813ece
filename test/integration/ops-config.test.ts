import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, RETRY_DEFAULTS } from '../../src/config.js';
import { redactSecrets } from '../../src/log.js';

describe('ops and write settings', () => {
  it('has safe defaults', () => {
    const c = loadConfig({});
    expect(c.ops).toEqual({ host: '127.0.0.1', port: 9464 });
    expect(c.writes).toEqual({ latencyHintMs: 200 });
    expect(c.retry).toEqual(RETRY_DEFAULTS);
    expect(c.retry).toMatchObject({
      writeAttempts: 8,
      writeBackoffMs: 1_000,
      rateLimitMaxRetries: 20,
    });
    expect(c.shutdownTimeoutMs).toBe(30_000);
  });

  it('requires a token off loopback, and lists every bad variable', () => {
    const err = (() => {
      try {
        loadConfig({ OPS_HOST: '0.0.0.0', OPS_PORT: '70000', WRITE_CONCURRENCY: '0' });
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(ConfigError);
    const problems = (err as ConfigError).problems;
    expect(problems.some((p) => p.startsWith('OPS_PORT'))).toBe(true);
    expect(problems.some((p) => p.startsWith('WRITE_CONCURRENCY'))).toBe(true);
    expect(() => loadConfig({ OPS_HOST: '0.0.0.0' })).toThrow(/OPS_TOKEN: required when OPS_HOST/);
  });

  it('accepts a token, registers it as a secret, and reads overrides', () => {
    const token = 'ops-token-0123456789abcdef';
    const c = loadConfig({
      OPS_HOST: '0.0.0.0',
      OPS_TOKEN: token,
      WRITE_CONCURRENCY: '12',
      RATE_LIMIT_MAX_RETRIES: '0',
    });
    expect(c.ops.token).toBe(token);
    expect(c.writes.concurrency).toBe(12);
    expect(c.retry.rateLimitMaxRetries).toBe(0);
    expect(redactSecrets(`Bearer ${token}`)).toBe('Bearer [REDACTED]');
  });
});
