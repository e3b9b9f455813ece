/**
 * The layout record of a prefix (`<prefix>:meta`): which version of the key
 * layout and value formats its state is in, and the bucket counts. Every
 * process of this release reads it before it uses state and refuses a layout
 * it cannot use, with a message that says what to do:
 *
 * - older: the state needs `crm-sync migrate` (src/state/migrations.ts);
 * - newer: a newer release wrote it, so this one must be upgraded;
 * - migrating: a migration is running, or stopped before its end;
 * - other bucket counts: the prefix was made with other settings.
 *
 * A prefix with no layout record holds no record state: the record is
 * written (HSETNX) before the first record or listing is stored.
 */
import type { RedisClient } from '../redis/connection.js';
import { redisCall, StateError } from './errors.js';
import { LAYOUT_VERSION, type Buckets, type KeyLayout } from './keys.js';
import { execAll } from './pipeline.js';

/** Fields of the layout record. */
export const LayoutField = {
  version: 'version',
  idBuckets: 'idBuckets',
  recBuckets: 'recBuckets',
  /** Set while a migration runs (the version it started from); removed at its end. */
  migratingFrom: 'migratingFrom',
} as const;

/** What a new prefix records (HSETNX: never over an existing value). */
export function newLayout(buckets: Buckets): Record<string, string> {
  return {
    [LayoutField.version]: String(LAYOUT_VERSION),
    [LayoutField.idBuckets]: String(buckets.ids),
    [LayoutField.recBuckets]: String(buckets.records),
  };
}

/** The version a stored layout record names (a record without one predates versions: 1). */
export function versionOf(meta: Record<string, string>): number {
  const v = meta[LayoutField.version];
  return v === undefined ? 1 : Number(v);
}

/**
 * Why this release cannot use the state with layout record `meta`, or
 * undefined when it can (an empty record: nothing stored yet).
 */
export function layoutProblem(
  prefix: string,
  meta: Record<string, string>,
  buckets: Buckets,
): StateError | undefined {
  if (Object.keys(meta).length === 0) return undefined;
  const from = meta[LayoutField.migratingFrom];
  if (from !== undefined) {
    return new StateError(
      'state.layout-migrating',
      `state under ${prefix} is being migrated from layout ${from} to ${versionOf(meta)}, or its ` +
        'migration stopped before the end: wait for `crm-sync migrate` to finish, or run it again',
      false,
    );
  }
  const version = versionOf(meta);
  if (!Number.isInteger(version) || version < 1) {
    return new StateError(
      'state.corrupt',
      `state under ${prefix} names layout ${JSON.stringify(meta[LayoutField.version])}, which is no version`,
      false,
    );
  }
  if (version > LAYOUT_VERSION) {
    return new StateError(
      'state.layout-new',
      `state under ${prefix} has layout ${version}, newer than this crm-sync knows ` +
        `(${LAYOUT_VERSION}): upgrade crm-sync to the release that wrote it`,
      false,
    );
  }
  // Bucket counts before an older version: a migration with other counts would
  // rewrite only some of the buckets (the migration refuses on this error).
  const want = newLayout(buckets);
  const wrong = [LayoutField.idBuckets, LayoutField.recBuckets].filter((f) => meta[f] !== want[f]);
  if (wrong.length > 0) {
    return new StateError(
      'state.layout-mismatch',
      `state under ${prefix} has another layout: ${wrong
        .map((f) => `${f} is ${meta[f]}, this process uses ${want[f]}`)
        .join('; ')}`,
      false,
    );
  }
  if (version < LAYOUT_VERSION) {
    return new StateError(
      'state.layout-old',
      `state under ${prefix} has layout ${version}; this crm-sync needs layout ${LAYOUT_VERSION}: ` +
        'stop every crm-sync worker of the older release, then run `crm-sync migrate`',
      false,
    );
  }
  return undefined;
}

/** The layout check of one store: refuses state this release cannot use, once per process. */
export class LayoutCheck {
  private checked: Promise<void> | undefined;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: KeyLayout,
  ) {}

  /**
   * The check for writes: the first use of a prefix records the layout
   * version and bucket counts (HSETNX); later uses compare them, so a store
   * built with other bucket counts, or state of another layout version, fails
   * loudly instead of being misread. Once per process.
   */
  check(): Promise<void> {
    this.checked ??= this.record().catch((err: unknown) => {
      this.checked = undefined;
      throw err;
    });
    return this.checked;
  }

  /**
   * The check for reads and for processes before they start: compares a
   * recorded layout but records none. With nothing recorded, nothing was ever
   * stored under any layout, so there is nothing to misread; the check is then
   * repeated on the next call (one extra round trip per call until the first
   * write).
   */
  async assertRead(): Promise<void> {
    if (this.checked) return this.checked;
    const have: Record<string, string> = await redisCall('checking the state layout', () =>
      this.redis.hgetall(this.keys.meta()),
    );
    if (Object.keys(have).length === 0) return;
    this.compare(have);
    this.checked = Promise.resolve();
  }

  private async record(): Promise<void> {
    const p = this.redis.pipeline();
    for (const [f, v] of Object.entries(newLayout(this.keys.buckets))) {
      p.hsetnx(this.keys.meta(), f, v);
    }
    p.hgetall(this.keys.meta());
    const out = await execAll(p, 'checking the state layout');
    this.compare(out[out.length - 1] as Record<string, string>);
  }

  private compare(have: Record<string, string>): void {
    const problem = layoutProblem(this.keys.prefix, have, this.keys.buckets);
    if (problem) throw problem;
  }
}
