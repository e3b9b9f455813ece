import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, EnvSchema, loadConfig, requirePlatform } from '../../src/config.js';
import { redactSecrets } from '../../src/log.js';

describe('loadConfig', () => {
  it('applies defaults', () => {
    const c = loadConfig({});
    expect(c.redisUrl).toBe('redis://127.0.0.1:6379');
    expect(c.prefix).toBe('{crm-sync}');
    // The rate is learned, up to PLATFORM_RATE_LIMIT_MAX.
    expect(c.platform).toMatchObject({ rateMode: 'auto', rateLimit: 200 });
  });

  it('reads PLATFORM_RATE_LIMIT as auto (capped by PLATFORM_RATE_LIMIT_MAX) or a fixed number', () => {
    expect(loadConfig({ PLATFORM_RATE_LIMIT_MAX: '50' }).platform).toMatchObject({
      rateMode: 'auto',
      rateLimit: 50,
    });
    expect(loadConfig({ PLATFORM_RATE_LIMIT: '12.5' }).platform).toMatchObject({
      rateMode: 'fixed',
      rateLimit: 12.5,
    });
    for (const bad of ['fast', '0', 'Auto']) {
      expect(() => loadConfig({ PLATFORM_RATE_LIMIT: bad }), bad).toThrow(/PLATFORM_RATE_LIMIT/);
    }
    expect(() => loadConfig({ PLATFORM_RATE_LIMIT_MAX: '-3' })).toThrow(/PLATFORM_RATE_LIMIT_MAX/);
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

  it('hands on the environment as read at start-up: source variables, log level, sandbox key', () => {
    const env: Record<string, string> = {
      LOG_LEVEL: 'debug',
      SANDBOX_API_KEY: 'sandbox-key-91c',
      CRM_SOURCE_AUTHORIZATION: 'Bearer source-auth-91c',
      HUBSPOT_TOKEN: 'hub-token-91c',
    };
    const c = loadConfig(env);
    expect(c.logLevel).toBe('debug');
    expect(c.sandboxApiKey).toBe('sandbox-key-91c');
    expect(c.sourceEnv).toMatchObject({
      HUBSPOT_TOKEN: 'hub-token-91c',
      CRM_SOURCE_AUTHORIZATION: 'Bearer source-auth-91c',
    });
    // A copy, read once: later changes to the environment are not seen.
    env.HUBSPOT_TOKEN = 'changed';
    expect(c.sourceEnv.HUBSPOT_TOKEN).toBe('hub-token-91c');
    expect(Object.isFrozen(c.sourceEnv)).toBe(true);
    expect(redactSecrets('sandbox-key-91c Bearer source-auth-91c')).toBe('[REDACTED] [REDACTED]');
  });

  it('reads an empty SANDBOX_API_KEY or CRM_SOURCE_AUTHORIZATION as not set', () => {
    const c = loadConfig({ SANDBOX_API_KEY: '', CRM_SOURCE_AUTHORIZATION: '' });
    expect(c.sandboxApiKey).toBeUndefined();
    expect(loadConfig({}).sandboxApiKey).toBeUndefined();
  });

  it('is the only module of src that reads process.env', () => {
    const src = join(import.meta.dirname, '..', '..', 'src');
    const readers = readdirSync(src, { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.ts'))
      .filter((f) =>
        readFileSync(join(src, f), 'utf8')
          .split('\n')
          .some((line) => !/^\s*(\*|\/\/)/.test(line) && /process\.env\b/.test(line)),
      );
    expect(readers).toEqual(['config.ts']);
  });

  it("is what README.md's Environment table lists: every variable, with its default", () => {
    const readme = readFileSync(join(import.meta.dirname, '..', '..', 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('## Environment'));
    const rows = [...section.matchAll(/^\| `([A-Z0-9_]+)` \| ([^|]+) \|/gm)].map((m) => ({
      name: m[1]!,
      given: m[2]!.trim(),
    }));
    expect(rows.map((r) => r.name).sort()).toEqual(Object.keys(EnvSchema.shape).sort());
    const defaults = EnvSchema.parse({}) as Record<string, unknown>;
    for (const { name, given } of rows) {
      const value = defaults[name];
      if (value === undefined) expect(['—', 'computed'], name).toContain(given);
      else expect(given, name).toBe(`\`${String(value)}\``);
    }
  });

  it('requirePlatform names what is missing', () => {
    expect(() => requirePlatform(loadConfig({}))).toThrow(
      /PLATFORM_BASE_URL[\s\S]*PLATFORM_API_KEY/,
    );
  });
});
