/**
 * The key layout of the state store (documented in docs/STATE.md). Every key
 * starts with the prefix, whose `{…}` hash tag puts all of them in one Redis
 * Cluster slot: transactions and multi-key commands work there too.
 *
 * Per-record maps are spread over many small hashes ("buckets") so Redis
 * keeps each one listpack-encoded (compact) instead of one huge hashtable.
 */
import type { Entity } from '../sync/identity.js';
import { hashTag } from '../redis/target.js';
import { StateError } from './errors.js';

/**
 * Version of this layout, stored in `<prefix>:meta` and checked on first use
 * (src/state/layout.ts). 2: every record state names its job (four-part
 * values), run records carry the layout that started them, and workers are
 * named by it. Older state is brought here by `crm-sync migrate`
 * (src/state/migrations.ts).
 */
export const LAYOUT_VERSION = 2;

/**
 * Bucket counts. 8192 identity buckets hold about 300,000 identity keys
 * (100,000 companies with three ids each) at ~37 per bucket, far from Redis'
 * default `hash-max-listpack-entries` of 512; 4096 record buckets hold
 * 100,000 records at ~24 (a million at ~245: still listpack, but each lookup
 * scans ten times as far). Part of the layout: they never change for a
 * prefix (stored in meta and checked).
 */
export const DEFAULT_BUCKETS = { ids: 8192, records: 4096 } as const;

/**
 * Buckets of a run's identity claims (run scratch). 16,384 listpack hashes
 * hold up to about 8 million claimed identity keys at Redis' default
 * `hash-max-listpack-entries` of 512 (two million, a million rows of two
 * keys, fill them to ~122). Four times as many buckets made each claim's
 * HSETNX faster at a million rows (4.2 → 2.9 µs) but not redis-server's CPU
 * per row (27 s either way: more keys, more expiries, colder caches).
 */
export const CLAIM_BUCKETS = 16384;

export interface Buckets {
  ids: number;
  records: number;
}

/** 32-bit FNV-1a: fast, stable across processes and versions. */
export function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/**
 * Field names of the run hash (`run(runId)`), besides its plain fields
 * (`job`, `status`, …): counters, timings, and the run's own bookkeeping.
 */
export const RunField = {
  /** A counter (`read`, `created`, …, and `pendingCreates`: creates settled with an unknown outcome). */
  counter: (name: string): string => `c:${name}`,
  /** Milliseconds of a named phase. */
  timing: (name: string): string => `t:${name}`,
  /** The name of a timing field, or undefined for any other field. */
  timingName: (field: string): string | undefined =>
    field.startsWith('t:') ? field.slice(2) : undefined,
  /** Pauses of the run by a transient fault so far. */
  retries: 'retries',
  /** Rounds of creates sent again after a verification found them missing. */
  round: 'round',
  /** The layout version of the release that started the run (src/state/layout.ts). */
  layout: 'layout',
} as const;

export class KeyLayout {
  readonly tag: string;

  constructor(
    readonly prefix: string,
    readonly buckets: Buckets = DEFAULT_BUCKETS,
  ) {
    const tag = hashTag(prefix);
    if (tag === undefined) {
      throw new StateError(
        'state.invalid-prefix',
        `state prefix ${JSON.stringify(prefix)} has no hash tag: it needs a non-empty {…} part, e.g. {crm-sync}`,
        false,
      );
    }
    this.tag = tag;
  }

  meta(): string {
    return `${this.prefix}:meta`;
  }
  /** Held by `crm-sync migrate` while it runs (one migration at a time). */
  migrationLock(): string {
    return `${this.prefix}:migrate-lock`;
  }

  // ---- per entity: our state ----
  idBucketOf(identityKey: string): number {
    return fnv1a(identityKey) % this.buckets.ids;
  }
  recBucketOf(platformId: number): number {
    return platformId % this.buckets.records;
  }
  ids(entity: Entity, bucket: number): string {
    return `${this.idsPrefix(entity)}${bucket}`;
  }
  recs(entity: Entity, bucket: number): string {
    return `${this.recsPrefix(entity)}${bucket}`;
  }
  /** An identity-map bucket's name without its number (a script that names buckets itself). */
  idsPrefix(entity: Entity): string {
    return `${this.prefix}:${entity}:id:`;
  }
  /** A record-state bucket's name without its number. */
  recsPrefix(entity: Entity): string {
    return `${this.prefix}:${entity}:rec:`;
  }
  entityInfo(entity: Entity): string {
    return `${this.prefix}:${entity}:state`;
  }
  pending(entity: Entity): string {
    return `${this.prefix}:${entity}:pending`;
  }

  // ---- per entity: index of platform records ----
  index(entity: Entity): string {
    return `${this.prefix}:${entity}:ix`;
  }
  indexIds(entity: Entity, gen: number, bucket: number): string {
    return `${this.prefix}:${entity}:ix:${gen}:id:${bucket}`;
  }
  indexRecs(entity: Entity, gen: number, bucket: number): string {
    return `${this.prefix}:${entity}:ix:${gen}:rec:${bucket}`;
  }
  /** Every key of one index generation. */
  *indexGeneration(entity: Entity, gen: number): Generator<string> {
    for (let b = 0; b < this.buckets.ids; b++) yield this.indexIds(entity, gen, b);
    for (let b = 0; b < this.buckets.records; b++) yield this.indexRecs(entity, gen, b);
  }

  // ---- runs ----
  runIds(): string {
    return `${this.prefix}:runs:ids`;
  }
  jobIds(): string {
    return `${this.prefix}:jobs:ids`;
  }
  runsAll(): string {
    return `${this.prefix}:runs`;
  }
  runsOfJob(job: string): string {
    return `${this.prefix}:runs:job:${job}`;
  }
  run(runId: string): string {
    return `${this.prefix}:run:${runId}`;
  }
  failures(runId: string): string {
    return `${this.prefix}:run:${runId}:failures`;
  }

  // ---- a run's write progress (no TTL: a run waiting for its writes may wait long) ----
  /** Lines whose write has settled in the current round. */
  settled(runId: string): string {
    return `${this.prefix}:run:${runId}:settled`;
  }
  /** Settled lines whose create outcome is still unknown (counted once, when known). */
  unknownCreates(runId: string): string {
    return `${this.prefix}:run:${runId}:unknown-creates`;
  }
  /** Every progress key of the run (not the run hash, not its failures). */
  progress(runId: string): string[] {
    return [this.settled(runId), this.unknownCreates(runId)];
  }

  // ---- run scratch (TTL; transient, not part of the versioned layout) ----
  /** The marker of a planning pass under way (its claim buckets got their TTL in this pass). */
  claims(runId: string): string {
    return `${this.prefix}:run:${runId}:claims`;
  }
  /** One bucket of a run's identity claims (`CLAIM_BUCKETS` of them). */
  claimBucket(runId: string, bucket: number): string {
    return `${this.claimBucketPrefix(runId)}${bucket}`;
  }
  /** A claim bucket's name without its number (a script that names buckets itself). */
  claimBucketPrefix(runId: string): string {
    return `${this.prefix}:run:${runId}:claims:`;
  }
  /** Every claim bucket of the run, or those numbered in `buckets`. */
  claimBuckets(runId: string, buckets?: readonly number[]): string[] {
    return buckets
      ? buckets.map((b) => this.claimBucket(runId, b))
      : Array.from({ length: CLAIM_BUCKETS }, (_, b) => this.claimBucket(runId, b));
  }
  /** Set once a release has unlinked the buckets its pass wrote: the run's end need not name them. */
  claimsUnlinked(runId: string): string {
    return `${this.prefix}:run:${runId}:claims-unlinked`;
  }
  conflicted(runId: string): string {
    return `${this.prefix}:run:${runId}:conflicted`;
  }
  /** Rows that lost to another row claiming the same record (a `duplicates` rule). */
  duplicates(runId: string): string {
    return `${this.prefix}:run:${runId}:duplicates`;
  }
  plan(runId: string): string {
    return `${this.prefix}:run:${runId}:plan`;
  }
  /** The first line of each chunk of planned writes, in line order. */
  planIndex(runId: string): string {
    return `${this.prefix}:run:${runId}:plan:ix`;
  }
  /**
   * The platform ids a run's export maps to, as one set: where releases before the seen
   * buckets kept them (read still, for a run such a release began).
   */
  seen(runId: string): string {
    return `${this.prefix}:run:${runId}:seen`;
  }
  /** The seen platform ids of one record bucket (the same number as `recBucketOf`). */
  seenBucket(runId: string, bucket: number): string {
    return `${this.seenBucketPrefix(runId)}${bucket}`;
  }
  /** A seen bucket's name without its number (a script that names buckets itself). */
  seenBucketPrefix(runId: string): string {
    return `${this.prefix}:run:${runId}:seen:`;
  }
  /** Every scratch key of the run; without its claim buckets when `claimBuckets` is false. */
  scratch(runId: string, claimBuckets = true): string[] {
    const claims = claimBuckets ? this.claimBuckets(runId) : [];
    const seen = Array.from({ length: this.buckets.records }, (_, b) => this.seenBucket(runId, b));
    return [
      this.claims(runId),
      this.claimsUnlinked(runId),
      ...claims,
      this.conflicted(runId),
      this.duplicates(runId),
      this.plan(runId),
      this.planIndex(runId),
      this.seen(runId),
      ...seen,
    ];
  }
}
