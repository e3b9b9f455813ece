/**
 * The audit of a platform listing against our state (`crm-sync audit`): pure.
 * Given every listed record of an entity with its identity keys, and what our
 * state says of each of those keys, it finds:
 *
 * - **shared identities**: an identity key (identity.ts) carried by two or
 *   more listed records. A shared `external_id` is always a problem: our jobs
 *   write one record per `external_id`. A weaker key (`crm_account_id`,
 *   `crm_company_id`, a member's e-mail) shared by records that all carry
 *   distinct `external_id`s is what two sources with overlapping ids look
 *   like (match.ts keeps them apart): reported, not counted as a problem.
 * - **lost records**: a listed record our state does not track (no identity
 *   key maps to its id) although our state gives one of its identity keys to
 *   another record, found through its `external_id`, or through a weaker key
 *   when the two do not carry different `external_id`s. That is the mark of a
 *   create sent twice after our state forgot the first: our state holds the
 *   second record, the first is nobody's. Also lost: an untracked record
 *   whose `created_by` is the name the caller says our API account has.
 * - **pending**: an untracked record carrying a key with a pending create (a
 *   create of unknown outcome): its run's finalize verifies it by listing.
 * - **untracked**: any other listed record no identity of which our state
 *   knows. Our state cannot tell whether we created it and lost every trace
 *   of it, or whether another tool or a person made it: counted and listed,
 *   not a problem.
 */
import { describeIdentity, type Entity } from './identity.js';

/** One listed platform record, reduced to what the audit reads. */
export interface AuditRecord {
  id: number;
  /** Its identity keys (`identityKeysOfPlatformRecord`), in priority order. */
  keys: readonly string[];
  /** The platform's `created_by` (companies), when listed. */
  createdBy?: string;
}

/** What our state says of identity keys (read beforehand; the audit does no I/O). */
export interface StateView {
  /** The platform id our state maps the key to. */
  idOf(key: string): number | undefined;
  /** The run whose create of this key has an unknown outcome. */
  pendingRunOf(key: string): string | undefined;
}

export interface AuditOptions {
  /** Our API account's name: untracked records with this `created_by` are ours, lost. */
  createdBy?: string;
}

export interface SharedIdentity {
  /** The identity key (`x:…`, `a:…`, `c:…`, `e:…`). */
  key: string;
  /** The field it is read from (`external_id`, `crm_company_id`, …). */
  field: string;
  value: string;
  /** The listed records carrying it, ascending. */
  platformIds: number[];
  /** The record our state maps the key to, when it does. */
  stateId?: number;
  /** Counted as a problem (false: distinct sources, see the module comment). */
  problem: boolean;
}

export interface UntrackedRecord {
  platformId: number;
  kind: 'lost' | 'pending' | 'untracked';
  /** The key that decided the kind (the first key, for `untracked`). */
  key?: string;
  /** `lost`: the record our state gives that key instead. */
  stateId?: number;
  /** `pending`: the run that left the create pending. */
  runId?: string;
  reason: string;
}

export interface AuditReport {
  entity: Entity;
  /** Listed records. */
  listed: number;
  /** Listed records our state tracks (an identity key maps to the record's id). */
  tracked: number;
  /** Listed records carrying no identity at all (never ours: every row we write has one). */
  withoutIdentity: number;
  shared: SharedIdentity[];
  /** Untracked records by kind: lost first, then pending, then untracked; by id within each. */
  untracked: UntrackedRecord[];
  /** Shared identities counted as problems plus lost records: 0 means clean. */
  problems: number;
}

const EXTERNAL = 'x:';
const KIND_ORDER = { lost: 0, pending: 1, untracked: 2 } as const;

/** The audit of one entity's listing. Pure. */
export function auditListing(
  entity: Entity,
  records: readonly AuditRecord[],
  state: StateView,
  opts: AuditOptions = {},
): AuditReport {
  // A record listed twice (a page boundary moved during the listing) is one record.
  const unique = [...new Map(records.map((r) => [r.id, r])).values()];
  const holders = new Map<string, number[]>();
  const externalOf = new Map<number, string>();
  let withoutIdentity = 0;
  for (const r of unique) {
    if (r.keys.length === 0) withoutIdentity++;
    for (const key of new Set(r.keys)) {
      const ids = holders.get(key);
      if (ids) ids.push(r.id);
      else holders.set(key, [r.id]);
      if (key.startsWith(EXTERNAL)) externalOf.set(r.id, key);
    }
  }

  const shared: SharedIdentity[] = [];
  for (const [key, ids] of holders) {
    if (ids.length < 2) continue;
    const distinct = [...ids].sort((a, b) => a - b);
    const externals = distinct.map((id) => externalOf.get(id));
    const distinctSources =
      !key.startsWith(EXTERNAL) &&
      externals.every((x) => x !== undefined) &&
      new Set(externals).size === externals.length;
    const stateId = state.idOf(key);
    shared.push({
      key,
      ...fieldAndValue(entity, key),
      platformIds: distinct,
      ...(stateId !== undefined && { stateId }),
      problem: !distinctSources,
    });
  }
  shared.sort((a, b) => a.platformIds[0]! - b.platformIds[0]! || a.key.localeCompare(b.key));

  const untracked: UntrackedRecord[] = [];
  let tracked = 0;
  for (const r of unique) {
    if (r.keys.length === 0) continue;
    if (r.keys.some((key) => state.idOf(key) === r.id)) {
      tracked++;
      continue;
    }
    untracked.push(classify(entity, r, state, externalOf, opts));
  }
  untracked.sort((a, b) => KIND_ORDER[a.kind] - KIND_ORDER[b.kind] || a.platformId - b.platformId);

  const problems =
    shared.filter((s) => s.problem).length + untracked.filter((u) => u.kind === 'lost').length;
  return {
    entity,
    listed: unique.length,
    tracked,
    withoutIdentity,
    shared,
    untracked,
    problems,
  };
}

/** Why an untracked record is lost, pending or merely untracked. */
function classify(
  entity: Entity,
  r: AuditRecord,
  state: StateView,
  externalOf: ReadonlyMap<number, string>,
  opts: AuditOptions,
): UntrackedRecord {
  const mine = externalOf.get(r.id);
  for (const key of r.keys) {
    const stateId = state.idOf(key);
    if (stateId === undefined) continue;
    const theirs = externalOf.get(stateId);
    // Found through a weaker key, a record with another external_id is another source's.
    const otherSource =
      !key.startsWith(EXTERNAL) && mine !== undefined && theirs !== undefined && mine !== theirs;
    if (otherSource) continue;
    return {
      platformId: r.id,
      kind: 'lost',
      key,
      stateId,
      reason: `carries ${describeIdentity(entity, key)}, which our state gives to record ${stateId}: a second record of one identity, most likely a create sent again after our state lost this one`,
    };
  }
  for (const key of r.keys) {
    const runId = state.pendingRunOf(key);
    if (runId === undefined) continue;
    return {
      platformId: r.id,
      kind: 'pending',
      key,
      runId,
      reason: `carries ${describeIdentity(entity, key)}, whose create by run ${runId} has an unknown outcome; that run's finalize verifies it`,
    };
  }
  if (opts.createdBy !== undefined && r.createdBy === opts.createdBy) {
    return {
      platformId: r.id,
      kind: 'lost',
      key: r.keys[0]!,
      reason: `created by ${JSON.stringify(opts.createdBy)} (our API account), unknown to our state`,
    };
  }
  return {
    platformId: r.id,
    kind: 'untracked',
    key: r.keys[0]!,
    reason: `no identity of it is in our state: created elsewhere, or by us with every trace lost (cannot be told apart)`,
  };
}

function fieldAndValue(entity: Entity, key: string): { field: string; value: string } {
  const described = describeIdentity(entity, key);
  const space = described.indexOf(' ');
  return { field: described.slice(0, space), value: key.slice(key.indexOf(':') + 1) };
}
