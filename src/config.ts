/**
 * Runtime settings: one zod schema for the environment, parsed once at
 * start-up. Every bad variable is reported at once, by name. The API key is
 * read from PLATFORM_API_KEY or from the file PLATFORM_API_KEY_FILE names
 * (Docker secrets), registered as a secret, and never printed.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { registerSecret } from './log.js';

const positiveInt = z.coerce.number().int().positive();

const EnvSchema = z.object({
  REDIS_URL: z.url().default('redis://127.0.0.1:6379'),
  CRM_SYNC_PREFIX: z.string().min(1).default('{crm-sync}'),
  PLATFORM_BASE_URL: z.url().optional(),
  PLATFORM_API_KEY: z.string().min(1).optional(),
  PLATFORM_API_KEY_FILE: z.string().min(1).optional(),
  PLATFORM_RATE_LIMIT: z.coerce.number().positive().default(10),
  PLATFORM_TIMEOUT_MS: positiveInt.default(30_000),
  CRM_SYNC_JOBS_DIR: z.string().min(1).default('./jobs'),
  CRM_SYNC_MAPPINGS_DIR: z.string().min(1).default('./config/mappings'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

export interface Config {
  redisUrl: string;
  prefix: string;
  platform: { baseUrl?: string; apiKey?: string; rateLimit: number; timeoutMs: number };
  jobsDir: string;
  mappingsDir: string;
  logLevel: string;
}

export class ConfigError extends Error {
  readonly code = 'crm-sync.config';
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  ${problems.join('\n  ')}`);
    this.name = 'ConfigError';
  }
}

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
  if (problems.length > 0) throw new ConfigError(problems);
  registerSecret(apiKey);
  return {
    redisUrl: e.REDIS_URL,
    prefix: e.CRM_SYNC_PREFIX,
    platform: {
      ...(e.PLATFORM_BASE_URL !== undefined && { baseUrl: e.PLATFORM_BASE_URL }),
      ...(apiKey !== undefined && { apiKey }),
      rateLimit: e.PLATFORM_RATE_LIMIT,
      timeoutMs: e.PLATFORM_TIMEOUT_MS,
    },
    jobsDir: e.CRM_SYNC_JOBS_DIR,
    mappingsDir: e.CRM_SYNC_MAPPINGS_DIR,
    logLevel: e.LOG_LEVEL,
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
