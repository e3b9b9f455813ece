/**
 * Options of the sandbox, validated once with zod so that a bad value is
 * reported by name (the CLI and tests get the same messages).
 */
import { z } from 'zod';
import type { Logger } from './log.js';
import { SandboxOptionsError } from './errors.js';
import { isRate, RATE_LIMIT_MODES, type RateLimitMode } from './throttle.js';

export const EXTENSIONS = ['members-put'] as const;
export type SandboxExtension = (typeof EXTENSIONS)[number];

/** The knobs that can change while the sandbox runs (chaos tests). */
export interface SandboxFaults {
  /**
   * Requests allowed per API key: `100/s`, `3000/m`, `10/h`, `5/d`, or a
   * number per second; 0 or undefined: unlimited.
   */
  rateLimit?: number | string;
  /** How the limit counts (throttle.ts): `sliding` (DRF's, the default), `fixed` or `bucket`. */
  rateLimitMode?: RateLimitMode;
  /** Delay before every platform answer. */
  latencyMs?: number;
  /** Share of platform requests answered 503 before any effect, 0..1. */
  faultRate?: number;
  /** Share of successful writes whose connection is cut after the commit, 0..1. */
  dropAfterCommit?: number;
}

export interface SandboxOptions extends SandboxFaults {
  apiKey: string;
  port?: number;
  host?: string;
  /** Default page size of paginated lists (100). */
  pageSize?: number;
  extensions?: SandboxExtension[];
  /** Seed of the PRNG behind fault and drop decisions, for reproducible tests. */
  seed?: number;
  logger?: Logger;
}

const fraction = z.number().min(0).max(1);
const FaultsSchema = z.strictObject({
  rateLimit: z
    .union([z.number().min(0).finite(), z.string()])
    .refine(isRate, 'expected N/s, N/m, N/h, N/d or a number per second')
    .optional(),
  rateLimitMode: z.enum(RATE_LIMIT_MODES).optional(),
  latencyMs: z.number().int().min(0).max(600_000).optional(),
  faultRate: fraction.optional(),
  dropAfterCommit: fraction.optional(),
});

const OptionsSchema = FaultsSchema.extend({
  apiKey: z.string().min(1),
  port: z.number().int().min(0).max(65535).optional(),
  host: z.string().min(1).optional(),
  pageSize: z.number().int().min(1).max(10_000).optional(),
  extensions: z.array(z.enum(EXTENSIONS)).optional(),
  seed: z.number().int().optional(),
  logger: z.custom<Logger>().optional(),
});

function check<T>(schema: z.ZodType<T>, value: unknown): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  // Never echo values: one of them is the API key.
  throw new SandboxOptionsError(
    parsed.error.issues.map((i) => `${i.path.join('.') || 'options'}: ${i.message}`),
  );
}

export function parseOptions(options: SandboxOptions): SandboxOptions {
  return check(OptionsSchema, options) as SandboxOptions;
}

export function parseFaults(faults: SandboxFaults): SandboxFaults {
  return check(FaultsSchema, faults);
}
