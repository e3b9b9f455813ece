/**
 * Runtime settings: one zod schema for the environment, parsed once at
 * start-up. Every bad variable is reported at once, by name. The API key is
 * read from PLATFORM_API_KEY or from the file PLATFORM_API_KEY_FILE names
 * (Docker secrets), registered as a secret, and never printed.
 *
 * Nothing else reads `process.env`: what other modules need of the
 * environment is handed on here, the variables a job file's `${NAME}`
 * references may name included (`sourceEnv`), read once at start-up.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import type { SourceEnv } from './crm/source.js';
import {
  ALERT_FORMATS,
  DEFAULT_LATENCY_HINT_MS,
  DEFAULT_OPS_HOST,
  DEFAULT_PLATFORM_TIMEOUT_MS,
  DEFAULT_PREFIX,
  DEFAULT_RATE_LIMIT_MAX,
  DEFAULT_RUN_HISTORY,
  DEFAULT_SHUTDOWN_TIMEOUT_MS,
  DEFAULT_WORKER_LOCK_MS,
  type AlertFormat,
} from './defaults.js';
import { ConfigError } from './config-error.js';
import { registerSecret } from './log.js';
import { isLoopback } from './loopback.js';
import { redisSecretsOf, redisTargetOf, type RedisTarget } from './redis/target.js';
import type { RetrySettings } from './platform/retry-policy.js';

const positiveInt = z.coerce.number().int().positive();
const count = z.coerce.number().int().min(0);

/**
 * Every number of the retry and outcome policy (src/platform/retry-policy.ts),
 * here once: the schema's defaults, and what a module given no settings
 * (a library caller, a test) applies. `page` is a CRM source's `retry:`
 * when its job file gives none.
 */
export const RETRY_DEFAULTS: Readonly<RetrySettings> = Object.freeze({
  requestRetries: 3,
  requestMinDelayMs: 200,
  requestMaxDelayMs: 5_000,
  writeAttempts: 8,
  writeBackoffMs: 1_000,
  // One cap for writes and listings alike (the engine had its own 50 beside this 20).
  rateLimitMaxRetries: 20,
  rateLimitWaitMs: 1_000,
  runRetries: 20,
  runBackoffMs: 1_000,
  runBackoffMaxMs: 60_000,
  page: Object.freeze({ attempts: 5, minDelayMs: 1_000, maxDelayMs: 60_000 }),
});

/** A credential that may be left empty: empty is the same as not set. */
const optionalSecret = z
  .string()
  .optional()
  .transform((v) => v || undefined);

/** A setting that may be left empty: empty is the same as not set. */
const optionalSetting = optionalSecret;

/** The one Redis node used when no Redis variable says otherwise. */
const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

/** Every variable crm-sync reads, with its default (README.md, Environment, lists the same). */
export const EnvSchema = z.object({
  REDIS_URL: z.url().default(DEFAULT_REDIS_URL),
  REDIS_CLUSTER_NODES: optionalSetting,
  REDIS_SENTINELS: optionalSetting,
  REDIS_SENTINEL_NAME: optionalSetting,
  REDIS_SENTINEL_PASSWORD: optionalSecret,
  REDIS_USERNAME: optionalSetting,
  REDIS_PASSWORD_FILE: optionalSetting,
  REDIS_TLS_CA_FILE: optionalSetting,
  REDIS_TLS_SERVERNAME: optionalSetting,
  CRM_SYNC_PREFIX: z.string().min(1).default(DEFAULT_PREFIX),
  PLATFORM_BASE_URL: z.url().optional(),
  PLATFORM_API_KEY: z.string().min(1).optional(),
  PLATFORM_API_KEY_FILE: z.string().min(1).optional(),
  PLATFORM_RATE_LIMIT: z.union([z.literal('auto'), z.coerce.number().positive()]).default('auto'),
  PLATFORM_RATE_LIMIT_MAX: z.coerce.number().positive().default(DEFAULT_RATE_LIMIT_MAX),
  PLATFORM_TIMEOUT_MS: positiveInt.default(DEFAULT_PLATFORM_TIMEOUT_MS),
  CRM_SYNC_JOBS_DIR: z.string().min(1).default('./jobs'),
  CRM_SYNC_MAPPINGS_DIR: z.string().min(1).default('./config/mappings'),
  CRM_SOURCE_AUTHORIZATION: optionalSecret,
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  OPS_HOST: z.string().min(1).default(DEFAULT_OPS_HOST),
  OPS_PORT: z.coerce.number().int().min(0).max(65_535).default(9464),
  OPS_TOKEN: z
    .string()
    .refine((v) => v.trim() === v, 'must not start or end with white space')
    .refine((v) => v.length >= 16, 'at least 16 characters')
    .optional(),
  SANDBOX_API_KEY: optionalSecret,
  WRITE_CONCURRENCY: positiveInt.optional(),
  PLATFORM_LATENCY_HINT_MS: positiveInt.default(DEFAULT_LATENCY_HINT_MS),
  PLATFORM_RETRIES: count.default(RETRY_DEFAULTS.requestRetries),
  PLATFORM_RETRY_MIN_MS: count.default(RETRY_DEFAULTS.requestMinDelayMs),
  PLATFORM_RETRY_MAX_MS: count.default(RETRY_DEFAULTS.requestMaxDelayMs),
  WRITE_ATTEMPTS: positiveInt.default(RETRY_DEFAULTS.writeAttempts),
  WRITE_BACKOFF_MS: positiveInt.default(RETRY_DEFAULTS.writeBackoffMs),
  RATE_LIMIT_MAX_RETRIES: count.default(RETRY_DEFAULTS.rateLimitMaxRetries),
  RUN_RETRIES: count.default(RETRY_DEFAULTS.runRetries),
  RUN_BACKOFF_MS: positiveInt.default(RETRY_DEFAULTS.runBackoffMs),
  RUN_BACKOFF_MAX_MS: positiveInt.default(RETRY_DEFAULTS.runBackoffMaxMs),
  SHUTDOWN_TIMEOUT_MS: positiveInt.default(DEFAULT_SHUTDOWN_TIMEOUT_MS),
  WORKER_LOCK_MS: positiveInt.default(DEFAULT_WORKER_LOCK_MS),
  CRM_SYNC_RUN_HISTORY: positiveInt.default(DEFAULT_RUN_HISTORY),
  CRM_SYNC_ALERT_WEBHOOK: optionalSecret.pipe(z.url({ protocol: /^https?$/ }).optional()),
  CRM_SYNC_ALERT_FORMAT: z.enum(ALERT_FORMATS).default('json'),
  CRM_SYNC_ALERT_SECRET: optionalSecret,
  CRM_SYNC_PUBLIC_URL: z
    .string()
    .optional()
    .transform((v) => v || undefined)
    .pipe(z.url({ protocol: /^https?$/ }).optional()),
  CRM_SYNC_ALERT_ATTEMPTS: positiveInt.default(10),
  CRM_SYNC_ALERT_BACKOFF_MS: positiveInt.default(5_000),
  CRM_SYNC_ALERT_TIMEOUT_MS: positiveInt.default(10_000),
});

export interface Config {
  /** Where Redis is (one node, a cluster or a Sentinel-managed primary) and how to reach it. */
  redis: RedisTarget;
  /** The Redis target as logs and messages show it: addresses, never a password. */
  redisUrl: string;
  prefix: string;
  platform: {
    baseUrl?: string;
    apiKey?: string;
    /**
     * `auto`: the rate is learned (src/platform/rate-learner.ts), at most
     * `rateLimit`; `fixed`: requests go at `rateLimit` (less the pacer's margin).
     */
    rateMode: 'auto' | 'fixed';
    /** The most requests per second: PLATFORM_RATE_LIMIT, or PLATFORM_RATE_LIMIT_MAX with auto. */
    rateLimit: number;
    timeoutMs: number;
  };
  jobsDir: string;
  mappingsDir: string;
  logLevel: string;
  /**
   * The environment as it was at start-up: where a URL source's `${NAME}`
   * references and CRM_SOURCE_AUTHORIZATION are read (any name may be
   * referenced, so it is all of it). Handed to the reader explicitly.
   */
  sourceEnv: SourceEnv;
  /** The key `crm-sync sandbox` accepts when no `--api-key` is given. */
  sandboxApiKey?: string;
  ops: { host: string; port: number; token?: string };
  writes: {
    /** WRITE_CONCURRENCY when set; otherwise computed from the rate and latency hint. */
    concurrency?: number;
    latencyHintMs: number;
  };
  /** The numbers of the retry and outcome policy (src/platform/retry-policy.ts). */
  retry: RetrySettings;
  shutdownTimeoutMs: number;
  /** How long a job's lock lasts without renewal: a killed worker's jobs move on after this. */
  workerLockMs: number;
  /** Finished runs kept per job definition (records, failure rows) and in the run queue. */
  runHistory: number;
  /** Alerts (src/alerts/): the global webhook, the console's address, delivery's retries. */
  alerts: {
    webhook?: string;
    format: AlertFormat;
    /** Signs every payload (HMAC-SHA256, src/alerts/signature.ts) when set. */
    secret?: string;
    publicUrl?: string;
    attempts: number;
    backoffMs: number;
    timeoutMs: number;
  };
}

export { ConfigError };

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = EnvSchema.safeParse(env);
  const problems: string[] = [];
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      // Never echo the value: it may be a secret.
      problems.push(`${issue.path.join('.')}: ${issue.message}`);
    }
    throw new ConfigError(problems);
  }
  const e = parsed.data;
  let apiKey = e.PLATFORM_API_KEY;
  if (e.PLATFORM_API_KEY && e.PLATFORM_API_KEY_FILE) {
    problems.push('PLATFORM_API_KEY, PLATFORM_API_KEY_FILE: set one, not both');
  } else if (e.PLATFORM_API_KEY_FILE) {
    try {
      apiKey = readFileSync(e.PLATFORM_API_KEY_FILE, 'utf8').trim();
      if (!apiKey) problems.push(`PLATFORM_API_KEY_FILE: ${e.PLATFORM_API_KEY_FILE} is empty`);
    } catch (err) {
      problems.push(
        `PLATFORM_API_KEY_FILE: cannot read ${e.PLATFORM_API_KEY_FILE} (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
      );
    }
  }
  const redis = redisTargetOf({
    ...(env.REDIS_URL ? { url: e.REDIS_URL } : {}),
    defaultUrl: DEFAULT_REDIS_URL,
    ...(e.REDIS_CLUSTER_NODES !== undefined && { clusterNodes: e.REDIS_CLUSTER_NODES }),
    ...(e.REDIS_SENTINELS !== undefined && { sentinels: e.REDIS_SENTINELS }),
    ...(e.REDIS_SENTINEL_NAME !== undefined && { sentinelName: e.REDIS_SENTINEL_NAME }),
    ...(e.REDIS_SENTINEL_PASSWORD !== undefined && { sentinelPassword: e.REDIS_SENTINEL_PASSWORD }),
    ...(e.REDIS_USERNAME !== undefined && { username: e.REDIS_USERNAME }),
    ...(e.REDIS_PASSWORD_FILE !== undefined && { passwordFile: e.REDIS_PASSWORD_FILE }),
    ...(e.REDIS_TLS_CA_FILE !== undefined && { tlsCaFile: e.REDIS_TLS_CA_FILE }),
    ...(e.REDIS_TLS_SERVERNAME !== undefined && { tlsServername: e.REDIS_TLS_SERVERNAME }),
    prefix: e.CRM_SYNC_PREFIX,
  });
  problems.push(...redis.problems);
  if (!isLoopback(e.OPS_HOST) && !e.OPS_TOKEN) {
    problems.push(`OPS_TOKEN: required when OPS_HOST (${e.OPS_HOST}) is not a loopback address`);
  }
  if (problems.length > 0 || !redis.target) throw new ConfigError(problems);
  registerSecret(apiKey);
  for (const secret of redisSecretsOf(redis.target, env.REDIS_URL)) registerSecret(secret);
  registerSecret(e.OPS_TOKEN);
  registerSecret(e.CRM_SOURCE_AUTHORIZATION);
  registerSecret(e.SANDBOX_API_KEY);
  // A webhook's URL is its key (Slack's path is).
  registerSecret(e.CRM_SYNC_ALERT_WEBHOOK);
  registerSecret(e.CRM_SYNC_ALERT_SECRET);
  return {
    redis: redis.target,
    redisUrl: redis.target.display,
    prefix: e.CRM_SYNC_PREFIX,
    platform: {
      ...(e.PLATFORM_BASE_URL !== undefined && { baseUrl: e.PLATFORM_BASE_URL }),
      ...(apiKey !== undefined && { apiKey }),
      rateMode: e.PLATFORM_RATE_LIMIT === 'auto' ? 'auto' : 'fixed',
      rateLimit:
        e.PLATFORM_RATE_LIMIT === 'auto' ? e.PLATFORM_RATE_LIMIT_MAX : e.PLATFORM_RATE_LIMIT,
      timeoutMs: e.PLATFORM_TIMEOUT_MS,
    },
    jobsDir: e.CRM_SYNC_JOBS_DIR,
    mappingsDir: e.CRM_SYNC_MAPPINGS_DIR,
    logLevel: e.LOG_LEVEL,
    sourceEnv: Object.freeze({ ...env }),
    ...(e.SANDBOX_API_KEY !== undefined && { sandboxApiKey: e.SANDBOX_API_KEY }),
    ops: {
      host: e.OPS_HOST,
      port: e.OPS_PORT,
      ...(e.OPS_TOKEN !== undefined && { token: e.OPS_TOKEN }),
    },
    writes: {
      ...(e.WRITE_CONCURRENCY !== undefined && { concurrency: e.WRITE_CONCURRENCY }),
      latencyHintMs: e.PLATFORM_LATENCY_HINT_MS,
    },
    retry: {
      ...RETRY_DEFAULTS,
      requestRetries: e.PLATFORM_RETRIES,
      requestMinDelayMs: e.PLATFORM_RETRY_MIN_MS,
      requestMaxDelayMs: e.PLATFORM_RETRY_MAX_MS,
      writeAttempts: e.WRITE_ATTEMPTS,
      writeBackoffMs: e.WRITE_BACKOFF_MS,
      rateLimitMaxRetries: e.RATE_LIMIT_MAX_RETRIES,
      runRetries: e.RUN_RETRIES,
      runBackoffMs: e.RUN_BACKOFF_MS,
      runBackoffMaxMs: e.RUN_BACKOFF_MAX_MS,
    },
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
    workerLockMs: e.WORKER_LOCK_MS,
    runHistory: e.CRM_SYNC_RUN_HISTORY,
    alerts: {
      ...(e.CRM_SYNC_ALERT_WEBHOOK !== undefined && { webhook: e.CRM_SYNC_ALERT_WEBHOOK }),
      format: e.CRM_SYNC_ALERT_FORMAT,
      ...(e.CRM_SYNC_ALERT_SECRET !== undefined && { secret: e.CRM_SYNC_ALERT_SECRET }),
      ...(e.CRM_SYNC_PUBLIC_URL !== undefined && { publicUrl: e.CRM_SYNC_PUBLIC_URL }),
      attempts: e.CRM_SYNC_ALERT_ATTEMPTS,
      backoffMs: e.CRM_SYNC_ALERT_BACKOFF_MS,
      timeoutMs: e.CRM_SYNC_ALERT_TIMEOUT_MS,
    },
  };
}

/** The platform settings a command that talks to the platform cannot run without. */
export function requirePlatform(config: Config): { baseUrl: string; apiKey: string } {
  const problems: string[] = [];
  if (!config.platform.baseUrl) problems.push('PLATFORM_BASE_URL: required for this command');
  if (!config.platform.apiKey)
    problems.push('PLATFORM_API_KEY or PLATFORM_API_KEY_FILE: required for this command');
  if (problems.length > 0) throw new ConfigError(problems);
  return { baseUrl: config.platform.baseUrl!, apiKey: config.platform.apiKey! };
}
