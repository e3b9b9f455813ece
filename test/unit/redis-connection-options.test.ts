/**
 * What each connection role sets, on each topology, read back from the ioredis
 * clients the factory builds (none of them is connected: producers connect
 * lazily, and the waiting roles are closed before their first attempt ends).
 */
import { Cluster, Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import {
  RECONNECT_CAP_MS,
  clientFor,
  createRedis,
  type RedisClient,
  type RedisRole,
} from '../../src/redis/connection.js';
import type { RedisTarget } from '../../src/redis/target.js';

const open: RedisClient[] = [];
afterEach(() => {
  for (const c of open.splice(0)) c.disconnect();
});

function build(role: RedisRole, target: RedisTarget, failFast = false): RedisClient {
  const c = clientFor(role, target, failFast);
  c.on('error', () => {});
  if (c instanceof Cluster) c.on('node error', () => {});
  open.push(c);
  return c;
}

// Port 1 on loopback: nothing listens, nothing is ever reached.
const node = { host: '127.0.0.1', port: 1 };
const tls = {
  ca: '-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n',
  servername: 'r.test',
};
const single: RedisTarget = { kind: 'single', node, db: 2, password: 'pw-1234', display: 'x' };
const cluster: RedisTarget = {
  kind: 'cluster',
  nodes: [node],
  username: 'u',
  password: 'pw-1234',
  tls,
  display: 'x',
};
const sentinel: RedisTarget = {
  kind: 'sentinel',
  sentinels: [node],
  name: 'mymaster',
  db: 1,
  username: 'u',
  password: 'pw-1234',
  sentinelPassword: 'spw-1234',
  tls,
  display: 'x',
};

describe('connection options per role', () => {
  it('one node: workers wait forever with an offline queue; producers fail fast', () => {
    const worker = build('worker', single) as Redis;
    expect(worker.options).toMatchObject({
      host: '127.0.0.1',
      port: 1,
      db: 2,
      password: 'pw-1234',
      maxRetriesPerRequest: null,
      enableOfflineQueue: true,
      connectionName: 'crm-sync:worker',
    });
    expect(worker.options.retryStrategy?.(50)).toBe(RECONNECT_CAP_MS);
    expect(
      worker.options.reconnectOnError?.(
        new Error("READONLY You can't write against a read only replica."),
      ),
    ).toBe(true);
    const producer = build('producer', single, true) as Redis;
    expect(producer.options).toMatchObject({
      maxRetriesPerRequest: 1,
      enableOfflineQueue: false,
      lazyConnect: true,
    });
    expect(producer.options.retryStrategy?.(1)).toBeNull();
  });

  it('cluster: the per-node options BullMQ checks, whole-cluster backoff, TLS with the name kept', () => {
    const worker = build('state', cluster) as Cluster;
    expect(worker).toBeInstanceOf(Cluster);
    expect(worker.options.redisOptions).toMatchObject({
      maxRetriesPerRequest: null,
      username: 'u',
      password: 'pw-1234',
      connectionName: 'crm-sync:state',
      tls: { ca: [tls.ca], servername: 'r.test' },
    });
    expect(worker.options.enableOfflineQueue).toBe(true);
    expect(typeof worker.options.clusterRetryStrategy).toBe('function');
    expect((worker.options.clusterRetryStrategy as (n: number) => number)(2)).toBe(200);
    // Node names are handed on as they are (a TLS certificate names hosts).
    let resolved: string | undefined;
    worker.options.dnsLookup?.('node-1.example', (_err, address) => (resolved = address));
    expect(resolved).toBe('node-1.example');

    const producer = build('producer', cluster, true) as Cluster;
    expect(producer.options.redisOptions).toMatchObject({ maxRetriesPerRequest: 1 });
    expect(producer.options.enableOfflineQueue).toBe(false);
    expect(producer.options.lazyConnect).toBe(true);
    expect((producer.options.clusterRetryStrategy as () => unknown)()).toBeNull();
  });

  it('Sentinel: the primary by name, the sentinels retried with the same backoff, over TLS', () => {
    const worker = build('worker', sentinel) as Redis;
    expect(worker.options).toMatchObject({
      name: 'mymaster',
      sentinels: [node],
      db: 1,
      password: 'pw-1234',
      sentinelPassword: 'spw-1234',
      maxRetriesPerRequest: null,
      // No +switch-master listener: ioredis ends the connection when it fires mid-reconnect.
      failoverDetector: false,
      enableTLSForSentinelMode: true,
      tls: { ca: [tls.ca], servername: 'r.test' },
      sentinelTLS: { ca: [tls.ca], servername: 'r.test' },
    });
    // What OPERATIONS documents: the ACL user is the data nodes' only (the sentinels
    // get REDIS_SENTINEL_PASSWORD as their default user), and the same TLS settings.
    expect(worker.options.username).toBe('u');
    expect(worker.options.sentinelUsername).toBeUndefined();
    expect(worker.options.sentinelTLS).toEqual(worker.options.tls);
    expect(worker.options.sentinelRetryStrategy?.(3)).toBe(400);
    const producer = build('producer', sentinel, true) as Redis;
    expect(producer.options.sentinelRetryStrategy?.(1)).toBeNull();
    expect(producer.options.failoverDetector).toBe(false);
  });
});

describe('connection logs', () => {
  it('a cluster node that fails is one line a minute per node; an outage of the cluster is one line', () => {
    const lines: [string, Record<string, unknown>][] = [];
    const log = (level: string) => (obj: Record<string, unknown>, msg: string) =>
      lines.push([`${level} ${msg}`, obj]);
    const logger = { warn: log('warn'), info: log('info'), debug: log('debug') };
    // A producer is lazy: nothing connects; the events are emitted by the test.
    const c = createRedis('producer', cluster, { logger: logger as never }) as Cluster;
    open.push(c);
    const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    c.emit('node error', refused, '10.0.0.1:7000');
    c.emit('node error', refused, '10.0.0.1:7000');
    c.emit('node error', refused, '10.0.0.2:7000');
    expect(lines.map(([m, o]) => [m.split(';')[0], o.node, o.code])).toEqual([
      ['warn Redis cluster node unreachable', '10.0.0.1:7000', 'ECONNREFUSED'],
      ['warn Redis cluster node unreachable', '10.0.0.2:7000', 'ECONNREFUSED'],
    ]);
    lines.length = 0;
    c.emit('error', new Error('Failed to refresh slots cache.'));
    c.emit('error', new Error('Failed to refresh slots cache.'));
    c.emit('ready');
    expect(lines.map(([m]) => m)).toEqual([
      'warn Redis connection lost; retrying',
      'info Redis connection restored',
    ]);
    expect(JSON.stringify(lines)).not.toContain('pw-1234');
  });
});
