import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, requirePlatform } from '../../src/config.js';

describe('loadConfig', () => {
  it('applies defaults', () => {
    const c = loadConfig({});
    expect(c.redisUrl).toBe('redis://127.0.0.1:6379');
    expect(c.prefix).toBe('{crm-sync}');
    expect(c.platform.rateLimit).toBe(10);
  });

  it('lists every bad variable at once, without echoing values', () => {
    try {
      loadConfig({
        REDIS_URL: 'nope',
        PLATFORM_RATE_LIMIT: '-1',
        LOG_LEVEL: 'loud',
        PLATFORM_API_KEY: 'sekrit-key',
      });
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      const msg = (err as Error).message;
      expect(msg).toContain('REDIS_URL');
      expect(msg).toContain('PLATFORM_RATE_LIMIT');
      expect(msg).toContain('LOG_LEVEL');
      expect(msg).not.toContain('sekrit-key');
    }
  });

  it('reads the key from PLATFORM_API_KEY_FILE', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cfg-'));
    const file = join(dir, 'key');
    writeFileSync(file, 'abc123key\n');
    const c = loadConfig({ PLATFORM_API_KEY_FILE: file, PLATFORM_BASE_URL: 'http://127.0.0.1:1' });
    expect(requirePlatform(c)).toEqual({ baseUrl: 'http://127.0.0.1:1', apiKey: 'abc123key' });
  });

  it('refuses both key variables, and a missing key file', () => {
    expect(() => loadConfig({ PLATFORM_API_KEY: 'a1b2', PLATFORM_API_KEY_FILE: '/x' })).toThrow(
      /set one, not both/,
    );
    expect(() => loadConfig({ PLATFORM_API_KEY_FILE: '/nonexistent/key' })).toThrow(/cannot read/);
  });

  it('requirePlatform names what is missing', () => {
    expect(() => requirePlatform(loadConfig({}))).toThrow(
      /PLATFORM_BASE_URL[\s\S]*PLATFORM_API_KEY/,
    );
  });
});
