/**
 * Where Redis is and how to reach it: one node (`REDIS_URL`), a Redis
 * Cluster (`REDIS_CLUSTER_NODES`) or a Sentinel-managed primary
 * (`REDIS_SENTINELS` + `REDIS_SENTINEL_NAME`), with credentials, database and
 * TLS. Built once from the environment's Redis variables by `redisTargetOf`
 * (called by src/config.ts, which reports its problems beside every other
 * setting's); the connection factory (connection.ts) turns it into an ioredis
 * client. Pure but for reading the password and CA files it is given.
 *
 * The rule: the cluster or sentinel list, when set, decides the topology; a
 * `REDIS_URL` set beside it gives only its credentials, database and scheme,
 * never an address. Nothing falls back to a default address in those modes.
 */
import { readFileSync } from 'node:fs';

export interface RedisAddress {
  host: string;
  port: number;
}

export interface RedisTls {
  /** PEM certificates to trust instead of the system's (REDIS_TLS_CA_FILE). */
  ca?: string;
  /** Name the servers' certificates are checked against (REDIS_TLS_SERVERNAME). */
  servername?: string;
}

interface TargetBase {
  /** ACL user (Redis 6+); without it, the `default` user. */
  username?: string;
  password?: string;
  /** Present when connections use TLS (`rediss://`). */
  tls?: RedisTls;
  /** What logs and messages show: addresses and scheme, never a credential. */
  display: string;
}

export type RedisTarget =
  | (TargetBase & { kind: 'single'; node: RedisAddress; db: number })
  | (TargetBase & { kind: 'cluster'; nodes: RedisAddress[] })
  | (TargetBase & {
      kind: 'sentinel';
      sentinels: RedisAddress[];
      /** The primary's name in Sentinel (REDIS_SENTINEL_NAME). */
      name: string;
      db: number;
      sentinelPassword?: string;
    });

/** The environment's Redis variables, as the schema in config.ts parsed them. */
export interface RedisEnv {
  /** Undefined when REDIS_URL is not set (then `defaultUrl` is one node's address). */
  url?: string;
  defaultUrl: string;
  clusterNodes?: string;
  sentinels?: string;
  sentinelName?: string;
  sentinelPassword?: string;
  passwordFile?: string;
  username?: string;
  tlsCaFile?: string;
  tlsServername?: string;
  prefix: string;
}

/** `host:port,host:port` (IPv6 as `[::1]:port`), or a problem naming the variable. */
export function parseAddresses(
  name: string,
  list: string,
): { addresses: RedisAddress[] } | { problem: string } {
  const items = list
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (items.length === 0) return { problem: `${name}: no address (expected host:port,…)` };
  const addresses: RedisAddress[] = [];
  for (const item of items) {
    const m = /^(?:\[([^\]]+)\]|([^:[\]\s/]+)):(\d{1,5})$/.exec(item);
    const port = m ? Number(m[3]) : NaN;
    if (!m || port < 1 || port > 65_535) {
      return { problem: `${name}: "${item}" is not host:port` };
    }
    addresses.push({ host: (m[1] ?? m[2])!, port });
  }
  return { addresses };
}

function format(a: RedisAddress): string {
  return a.host.includes(':') ? `[${a.host}]:${a.port}` : `${a.host}:${a.port}`;
}

function readFile(name: string, path: string, problems: string[]): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    problems.push(
      `${name}: cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
    );
    return undefined;
  }
}

interface UrlParts {
  tls: boolean;
  host: string;
  port: number;
  db: number;
  username?: string;
  password?: string;
}

function parseUrl(url: string, problems: string[]): UrlParts | undefined {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    problems.push('REDIS_URL: not a URL');
    return undefined;
  }
  if (u.protocol !== 'redis:' && u.protocol !== 'rediss:') {
    problems.push(`REDIS_URL: scheme ${u.protocol}// is not redis:// or rediss://`);
    return undefined;
  }
  const path = u.pathname.replace(/^\//, '');
  const db = path === '' ? 0 : Number(path);
  if (!Number.isInteger(db) || db < 0) {
    problems.push(`REDIS_URL: the path must be a database number, not /${path}`);
    return undefined;
  }
  let username: string | undefined;
  let password: string | undefined;
  try {
    if (u.username !== '') username = decodeURIComponent(u.username);
    if (u.password !== '') password = decodeURIComponent(u.password);
  } catch {
    // A `%` not followed by two hex digits; the message never shows the value.
    problems.push('REDIS_URL: user or password has invalid %-encoding');
    return undefined;
  }
  return {
    tls: u.protocol === 'rediss:',
    host: u.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: u.port === '' ? 6379 : Number(u.port),
    db,
    ...(username !== undefined && { username }),
    ...(password !== undefined && { password }),
  };
}

/**
 * The target the environment describes, or every problem with it. The
 * password (from REDIS_URL or REDIS_PASSWORD_FILE) and the sentinel password
 * are returned in the target; the caller registers them as secrets.
 */
export function redisTargetOf(env: RedisEnv): { target?: RedisTarget; problems: string[] } {
  const problems: string[] = [];
  const given = env.url !== undefined;
  const url = parseUrl(env.url ?? env.defaultUrl, problems);
  if (env.clusterNodes !== undefined && env.sentinels !== undefined) {
    problems.push('REDIS_CLUSTER_NODES, REDIS_SENTINELS: set one, not both');
  }
  if (env.sentinelName !== undefined && env.sentinels === undefined) {
    problems.push('REDIS_SENTINEL_NAME: only used with REDIS_SENTINELS');
  }
  if (env.sentinelPassword !== undefined && env.sentinels === undefined) {
    problems.push('REDIS_SENTINEL_PASSWORD: only used with REDIS_SENTINELS');
  }

  // Credentials: the URL's, or REDIS_USERNAME / REDIS_PASSWORD_FILE, not both.
  let username = given ? url?.username : undefined;
  let password = given ? url?.password : undefined;
  if (env.username !== undefined) {
    if (username !== undefined && username !== env.username) {
      problems.push('REDIS_USERNAME: REDIS_URL names another user; set the user in one place');
    }
    username = env.username;
  }
  if (env.passwordFile !== undefined) {
    if (password !== undefined) {
      problems.push('REDIS_PASSWORD_FILE: REDIS_URL has a password too; set one, not both');
    }
    const text = readFile('REDIS_PASSWORD_FILE', env.passwordFile, problems);
    if (text !== undefined) {
      password = text.replace(/\r?\n$/, '');
      if (password === '') problems.push(`REDIS_PASSWORD_FILE: ${env.passwordFile} is empty`);
    }
  }
  if (username !== undefined && password === undefined) {
    problems.push(
      'REDIS_USERNAME: an ACL user needs a password (REDIS_URL or REDIS_PASSWORD_FILE)',
    );
  }

  // TLS: a rediss:// URL, or a CA file when no REDIS_URL says otherwise.
  const tlsOn = url?.tls === true || (!given && env.tlsCaFile !== undefined);
  if (env.tlsCaFile !== undefined && given && url?.tls === false) {
    problems.push('REDIS_TLS_CA_FILE: REDIS_URL is redis://; use rediss:// for TLS');
  }
  if (env.tlsServername !== undefined && !tlsOn) {
    problems.push('REDIS_TLS_SERVERNAME: only used with TLS (rediss:// or REDIS_TLS_CA_FILE)');
  }
  let tls: RedisTls | undefined;
  if (tlsOn) {
    tls = {};
    if (env.tlsCaFile !== undefined) {
      const ca = readFile('REDIS_TLS_CA_FILE', env.tlsCaFile, problems);
      if (ca !== undefined && !ca.includes('-----BEGIN CERTIFICATE-----')) {
        problems.push(`REDIS_TLS_CA_FILE: ${env.tlsCaFile} holds no PEM certificate`);
      } else if (ca !== undefined) {
        tls.ca = ca;
      }
    }
    if (env.tlsServername !== undefined) tls.servername = env.tlsServername;
  }

  const scheme = tlsOn ? 'rediss' : 'redis';
  const base = {
    ...(username !== undefined && { username }),
    ...(password !== undefined && { password }),
    ...(tls !== undefined && { tls }),
  };
  let target: RedisTarget | undefined;
  if (env.clusterNodes !== undefined) {
    const parsed = parseAddresses('REDIS_CLUSTER_NODES', env.clusterNodes);
    if ('problem' in parsed) problems.push(parsed.problem);
    if (given && url !== undefined && url.db !== 0) {
      problems.push(`REDIS_URL: database ${url.db} does not exist on Redis Cluster (only 0)`);
    }
    if (hashTag(env.prefix) === undefined) {
      problems.push(
        `CRM_SYNC_PREFIX: "${env.prefix}" has no hash tag; Redis Cluster needs one ({name}) so that every key shares a slot`,
      );
    }
    if ('addresses' in parsed) {
      const nodes = parsed.addresses;
      target = {
        kind: 'cluster',
        nodes,
        ...base,
        display: `${scheme}://${nodes.map(format).join(',')} (cluster)`,
      };
    }
  } else if (env.sentinels !== undefined) {
    const parsed = parseAddresses('REDIS_SENTINELS', env.sentinels);
    if ('problem' in parsed) problems.push(parsed.problem);
    if (env.sentinelName === undefined)
      problems.push('REDIS_SENTINEL_NAME: required with REDIS_SENTINELS');
    if ('addresses' in parsed && env.sentinelName !== undefined && url !== undefined) {
      const sentinels = parsed.addresses;
      const db = given ? url.db : 0;
      target = {
        kind: 'sentinel',
        sentinels,
        name: env.sentinelName,
        db,
        ...base,
        ...(env.sentinelPassword !== undefined && { sentinelPassword: env.sentinelPassword }),
        display: `${scheme}://${sentinels.map(format).join(',')}/${db} (sentinel ${env.sentinelName})`,
      };
    }
  } else if (url !== undefined) {
    const node = { host: url.host, port: url.port };
    target = {
      kind: 'single',
      node,
      db: url.db,
      ...base,
      display: safeRedisUrl(env.url ?? env.defaultUrl),
    };
  }
  return problems.length > 0 ? { problems } : { target: target!, problems };
}

/**
 * The URL with its user name, password, query and fragment removed, for
 * messages and logs (a query could carry a credential, e.g. `?password=`).
 */
export function safeRedisUrl(url: string): string {
  try {
    const u = new URL(url);
    u.username = '';
    u.password = '';
    u.search = '';
    u.hash = '';
    return u.toString().replace(/\/$/, '');
  } catch {
    return 'redis://[unparseable URL]';
  }
}

/**
 * Every form of the target's passwords that could be printed: the passwords
 * themselves and, for a URL, its password as written (percent-encoded).
 */
export function redisSecretsOf(target: RedisTarget | undefined, url?: string): string[] {
  const out: string[] = [];
  if (target?.password !== undefined) out.push(target.password);
  if (target?.kind === 'sentinel' && target.sentinelPassword !== undefined) {
    out.push(target.sentinelPassword);
  }
  if (url !== undefined) {
    try {
      const u = new URL(url);
      if (u.password) {
        out.push(u.password);
        out.push(decodeURIComponent(u.password));
      }
    } catch {
      // A URL that does not parse or decode is reported by validation; what it holds is kept.
    }
  }
  return out;
}

/** One node from a URL, as `createRedis` is given one (library callers, tests). */
export function targetFromUrl(url: string): RedisTarget {
  const { target, problems } = redisTargetOf({ url, defaultUrl: url, prefix: '{crm-sync}' });
  if (!target) throw new Error(`invalid Redis URL: ${problems.join('; ')}`);
  return target;
}

/** The hash tag Redis Cluster would hash for a key: first `{`, first `}` after it, non-empty. */
export function hashTag(key: string): string | undefined {
  const open = key.indexOf('{');
  if (open < 0) return undefined;
  const close = key.indexOf('}', open + 1);
  if (close <= open + 1) return undefined;
  return key.slice(open + 1, close);
}
