/**
 * The Redis settings: one node, a cluster or Sentinel, credentials from the
 * URL or from a file, TLS; every bad combination refused at start-up with a
 * message naming the variable, and no password in any message.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { redactSecrets } from '../../src/log.js';
import { parseAddresses, safeRedisUrl } from '../../src/redis/target.js';
import { hashTag } from '../../src/redis/target.js';

const dir = mkdtempSync(join(tmpdir(), 'cfg-redis-'));
function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}
const PEM = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';

/** The problems loadConfig reports for an environment (it must throw). */
function problems(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).problems;
  }
  throw new Error('loadConfig accepted the environment');
}

describe('Redis settings: one node', () => {
  it('defaults to one local node, database 0, no TLS, no credentials', () => {
    const c = loadConfig({});
    expect(c.redis).toEqual({
      kind: 'single',
      node: { host: '127.0.0.1', port: 6379 },
      db: 0,
      display: 'redis://127.0.0.1:6379',
    });
    expect(c.redisUrl).toBe('redis://127.0.0.1:6379');
  });

  it('takes user, password and database from REDIS_URL; shows it without them', () => {
    const c = loadConfig({ REDIS_URL: 'redis://app:pa%24s-91x@redis.internal:6380/3' });
    expect(c.redis).toMatchObject({
      kind: 'single',
      node: { host: 'redis.internal', port: 6380 },
      db: 3,
      username: 'app',
      password: 'pa$s-91x',
    });
    expect(c.redisUrl).toBe('redis://redis.internal:6380/3');
    expect(redactSecrets('a pa$s-91x b pa%24s-91x')).toBe('a [REDACTED] b [REDACTED]');
  });

  it('rediss:// turns TLS on; a CA file and a server name are added to it', () => {
    expect(loadConfig({ REDIS_URL: 'rediss://h:6379' }).redis.tls).toEqual({});
    const ca = file('ca.pem', PEM);
    const c = loadConfig({
      REDIS_URL: 'rediss://h.example:6380',
      REDIS_TLS_CA_FILE: ca,
      REDIS_TLS_SERVERNAME: 'redis.example',
    });
    expect(c.redis.tls).toEqual({ ca: PEM, servername: 'redis.example' });
    expect(c.redisUrl).toBe('rediss://h.example:6380');
  });

  it('a CA file without REDIS_URL turns TLS on (the default node)', () => {
    const c = loadConfig({ REDIS_TLS_CA_FILE: file('ca2.pem', PEM) });
    expect(c.redis).toMatchObject({ kind: 'single', tls: { ca: PEM } });
  });

  it('refuses TLS settings that contradict the URL, and a CA file that is not one', () => {
    expect(problems({ REDIS_URL: 'redis://h:1', REDIS_TLS_CA_FILE: file('ca3.pem', PEM) })).toEqual(
      ['REDIS_TLS_CA_FILE: REDIS_URL is redis://; use rediss:// for TLS'],
    );
    expect(problems({ REDIS_TLS_SERVERNAME: 'x.example' })).toEqual([
      'REDIS_TLS_SERVERNAME: only used with TLS (rediss:// or REDIS_TLS_CA_FILE)',
    ]);
    const notPem = file('not.pem', 'hello');
    expect(problems({ REDIS_URL: 'rediss://h:1', REDIS_TLS_CA_FILE: notPem })).toEqual([
      `REDIS_TLS_CA_FILE: ${notPem} holds no PEM certificate`,
    ]);
    expect(
      problems({ REDIS_URL: 'rediss://h:1', REDIS_TLS_CA_FILE: '/nonexistent/ca.pem' }),
    ).toEqual(['REDIS_TLS_CA_FILE: cannot read /nonexistent/ca.pem (ENOENT)']);
  });

  it('refuses a URL that is not Redis, or whose path is not a database', () => {
    expect(problems({ REDIS_URL: 'http://h:1' })).toEqual([
      'REDIS_URL: scheme http:// is not redis:// or rediss://',
    ]);
    expect(problems({ REDIS_URL: 'redis://h:1/main' })).toEqual([
      'REDIS_URL: the path must be a database number, not /main',
    ]);
  });

  it('refuses a user or password with a malformed %-escape, naming REDIS_URL, never the value', () => {
    for (const url of ['redis://:p%zz-secret-7@host:6379', 'redis://us%4-er:pw@host:6379']) {
      const msgs = problems({ REDIS_URL: url });
      expect(msgs).toEqual(['REDIS_URL: user or password has invalid %-encoding']);
      expect(msgs.join('\n')).not.toMatch(/p%zz|secret-7|us%4/);
    }
  });

  it('shows the URL without its query or fragment (a query could carry a password)', () => {
    const c = loadConfig({ REDIS_URL: 'redis://h.example:6380/2?password=q-secret-3#frag-x' });
    expect(c.redisUrl).toBe('redis://h.example:6380/2');
    expect(c.redis.display).toBe('redis://h.example:6380/2');
    expect(safeRedisUrl('rediss://u:pw-9@h:1/0?password=q-secret-3&x=1#f')).toBe('rediss://h:1/0');
    expect(safeRedisUrl('redis://h:1?password=q-secret-3')).toBe('redis://h:1');
  });
});

describe('Redis settings: credentials from a file', () => {
  it('reads the password from REDIS_PASSWORD_FILE (one trailing newline dropped) with an ACL user', () => {
    const c = loadConfig({
      REDIS_URL: 'redis://h:6379/1',
      REDIS_USERNAME: 'crm-sync',
      REDIS_PASSWORD_FILE: file('pw', 'file-pass-77q\n'),
    });
    expect(c.redis).toMatchObject({ username: 'crm-sync', password: 'file-pass-77q', db: 1 });
    expect(redactSecrets('x file-pass-77q')).toBe('x [REDACTED]');
  });

  it('refuses two passwords, two users, an empty or missing file, and a user without a password', () => {
    const pw = file('pw2', 'pw-two-88\n');
    expect(problems({ REDIS_URL: 'redis://:url-pass-88@h:1', REDIS_PASSWORD_FILE: pw })).toEqual([
      'REDIS_PASSWORD_FILE: REDIS_URL has a password too; set one, not both',
    ]);
    expect(problems({ REDIS_URL: 'redis://alice:x-pass-88@h:1', REDIS_USERNAME: 'bob' })).toEqual([
      'REDIS_USERNAME: REDIS_URL names another user; set the user in one place',
    ]);
    const empty = file('empty', '\n');
    expect(problems({ REDIS_PASSWORD_FILE: empty })).toEqual([
      `REDIS_PASSWORD_FILE: ${empty} is empty`,
    ]);
    expect(problems({ REDIS_PASSWORD_FILE: '/nonexistent/pw' })).toEqual([
      'REDIS_PASSWORD_FILE: cannot read /nonexistent/pw (ENOENT)',
    ]);
    expect(problems({ REDIS_USERNAME: 'crm-sync' })).toEqual([
      'REDIS_USERNAME: an ACL user needs a password (REDIS_URL or REDIS_PASSWORD_FILE)',
    ]);
  });

  it('never echoes a password in a problem', () => {
    const msgs = problems({
      REDIS_URL: 'redis://:echo-pass-55@h:1/x',
      REDIS_CLUSTER_NODES: 'nope',
      REDIS_SENTINEL_PASSWORD: 'sentinel-pass-55',
    });
    expect(msgs.length).toBeGreaterThan(1);
    expect(msgs.join('\n')).not.toMatch(/echo-pass-55|sentinel-pass-55/);
  });
});

describe('Redis settings: cluster', () => {
  it('the node list decides the topology; REDIS_URL beside it gives only credentials and scheme', () => {
    const c = loadConfig({
      REDIS_CLUSTER_NODES: '10.0.0.1:7000, 10.0.0.2:7001,[fd00::3]:7002',
      REDIS_URL: 'rediss://app:cl-pass-31@ignored.example:6379',
    });
    expect(c.redis).toEqual({
      kind: 'cluster',
      nodes: [
        { host: '10.0.0.1', port: 7000 },
        { host: '10.0.0.2', port: 7001 },
        { host: 'fd00::3', port: 7002 },
      ],
      username: 'app',
      password: 'cl-pass-31',
      tls: {},
      display: 'rediss://10.0.0.1:7000,10.0.0.2:7001,[fd00::3]:7002 (cluster)',
    });
    expect(c.redisUrl).not.toContain('ignored.example');
    expect(c.redisUrl).not.toContain('cl-pass-31');
  });

  it('without REDIS_URL, plain and without credentials (no default address is added)', () => {
    const c = loadConfig({ REDIS_CLUSTER_NODES: 'a:1' });
    expect(c.redis).toEqual({
      kind: 'cluster',
      nodes: [{ host: 'a', port: 1 }],
      display: 'redis://a:1 (cluster)',
    });
  });

  it('refuses a prefix without a hash tag, a database other than 0, and bad addresses', () => {
    expect(problems({ REDIS_CLUSTER_NODES: 'a:1', CRM_SYNC_PREFIX: 'crm-sync' })).toEqual([
      'CRM_SYNC_PREFIX: "crm-sync" has no hash tag; Redis Cluster needs one ({name}) so that every key shares a slot',
    ]);
    expect(problems({ REDIS_CLUSTER_NODES: 'a:1', CRM_SYNC_PREFIX: 'x{}y' })).toHaveLength(1);
    expect(problems({ REDIS_CLUSTER_NODES: 'a:1', REDIS_URL: 'redis://h:1/2' })).toEqual([
      'REDIS_URL: database 2 does not exist on Redis Cluster (only 0)',
    ]);
    expect(problems({ REDIS_CLUSTER_NODES: 'a:1,b' })).toEqual([
      'REDIS_CLUSTER_NODES: "b" is not host:port',
    ]);
    expect(problems({ REDIS_CLUSTER_NODES: ' , ' })).toEqual([
      'REDIS_CLUSTER_NODES: no address (expected host:port,…)',
    ]);
    // A prefix without a tag is fine on one node.
    expect(loadConfig({ CRM_SYNC_PREFIX: 'crm-sync' }).prefix).toBe('crm-sync');
  });

  it('refuses cluster and Sentinel together', () => {
    expect(
      problems({ REDIS_CLUSTER_NODES: 'a:1', REDIS_SENTINELS: 'b:2', REDIS_SENTINEL_NAME: 'm' }),
    ).toEqual(['REDIS_CLUSTER_NODES, REDIS_SENTINELS: set one, not both']);
  });
});

describe('Redis settings: Sentinel', () => {
  it('asks the sentinels for the named primary; database and credentials from REDIS_URL', () => {
    const c = loadConfig({
      REDIS_SENTINELS: 's1:26379,s2:26379',
      REDIS_SENTINEL_NAME: 'mymaster',
      REDIS_SENTINEL_PASSWORD: 'sent-pass-42',
      REDIS_URL: 'redis://:node-pass-42@ignored:6379/4',
    });
    expect(c.redis).toEqual({
      kind: 'sentinel',
      sentinels: [
        { host: 's1', port: 26379 },
        { host: 's2', port: 26379 },
      ],
      name: 'mymaster',
      db: 4,
      password: 'node-pass-42',
      sentinelPassword: 'sent-pass-42',
      display: 'redis://s1:26379,s2:26379/4 (sentinel mymaster)',
    });
    expect(redactSecrets('sent-pass-42 node-pass-42')).toBe('[REDACTED] [REDACTED]');
  });

  it('refuses sentinels without a name, and Sentinel settings without sentinels', () => {
    expect(problems({ REDIS_SENTINELS: 's:1' })).toEqual([
      'REDIS_SENTINEL_NAME: required with REDIS_SENTINELS',
    ]);
    expect(problems({ REDIS_SENTINEL_NAME: 'm', REDIS_SENTINEL_PASSWORD: 'pw-sent-1' })).toEqual([
      'REDIS_SENTINEL_NAME: only used with REDIS_SENTINELS',
      'REDIS_SENTINEL_PASSWORD: only used with REDIS_SENTINELS',
    ]);
  });

  it('reads an empty variable as not set', () => {
    expect(loadConfig({ REDIS_SENTINELS: '', REDIS_CLUSTER_NODES: '' }).redis.kind).toBe('single');
  });
});

describe('hash tags and addresses', () => {
  it('finds the tag Redis Cluster hashes by', () => {
    expect(hashTag('{crm-sync}')).toBe('crm-sync');
    expect(hashTag('app:{t}:x')).toBe('t');
    expect(hashTag('{}x{y}')).toBeUndefined();
    expect(hashTag('{open')).toBeUndefined();
    expect(hashTag('plain')).toBeUndefined();
  });

  it('parses host:port lists, IPv6 in brackets, and refuses ports out of range', () => {
    expect(parseAddresses('X', 'h:1,[::1]:2')).toEqual({
      addresses: [
        { host: 'h', port: 1 },
        { host: '::1', port: 2 },
      ],
    });
    expect(parseAddresses('X', 'h:0')).toEqual({ problem: 'X: "h:0" is not host:port' });
    expect(parseAddresses('X', 'h:65536')).toEqual({ problem: 'X: "h:65536" is not host:port' });
    expect(parseAddresses('X', '::1:2')).toEqual({ problem: 'X: "::1:2" is not host:port' });
  });
});
