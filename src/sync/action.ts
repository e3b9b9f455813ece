/**
 * What the sync decides for each row of an export. Every row read ends as
 * exactly one action, so the run summary can count them all: the writes
 * (`create`, `update`), the no-ops (`unchanged`, `adopt`, `skip`), the rows
 * withheld (`unsupported`, `pending`, `invalid`, `conflict`, `duplicate`).
 */
import type { FieldChange } from './diff.js';
import { describeIdentity, type Entity } from './identity.js';

export type Mode = 'upsert' | 'create-only' | 'update-only';

export const MODES: readonly Mode[] = ['upsert', 'create-only', 'update-only'];

/** A mapped request body (a CompanyRequest or a MemberRequest). */
export type Body = Record<string, unknown>;

/** A create whose outcome is unknown: it must be verified by listing before anything else. */
export interface PendingCreate {
  runId: string;
  /** When the ambiguous attempt was made (ms since the epoch). */
  since: number;
}

/** Send POST: no platform record has any of the row's identities. */
export interface CreateAction<B extends Body = Body> {
  kind: 'create';
  line: number;
  keys: string[];
  hash: string;
  body: B;
}

/** Send PUT to `platformId`. `changes` is the field diff when the platform's values are known. */
export interface UpdateAction<B extends Body = Body> {
  kind: 'update';
  line: number;
  keys: string[];
  hash: string;
  body: B;
  platformId: number;
  changes?: FieldChange[];
}

/** The platform already holds these values: record the hash, write nothing. */
export interface AdoptAction {
  kind: 'adopt';
  line: number;
  keys: string[];
  hash: string;
  platformId: number;
}

/** Same hash as the last confirmed write. */
export interface UnchangedAction {
  kind: 'unchanged';
  line: number;
  keys: string[];
  platformId: number;
}

/**
 * The run's mode says no (create-only and it exists, update-only and it does
 * not), or a skip rule of the mapping says the row is no live record (`rule`).
 */
export interface SkipAction {
  kind: 'skip';
  line: number;
  keys: string[];
  platformId?: number;
  reason: string;
  /** The mapping's skip rule that matched, with the value it read. */
  rule?: string;
  value?: unknown;
}

/** A change the platform API cannot make (a member, without the PUT /members/{id} opt-in). */
export interface UnsupportedAction {
  kind: 'unsupported';
  line: number;
  keys: string[];
  platformId: number;
  changes?: FieldChange[];
  reason: string;
}

/** An earlier create of this identity has an unknown outcome. */
export interface PendingAction<B extends Body = Body> {
  kind: 'pending';
  line: number;
  keys: string[];
  hash: string;
  body: B;
  pending: PendingCreate;
  reason: string;
}

/** Refused before sending: unreadable row, bad value, no identity. */
export interface InvalidAction {
  kind: 'invalid';
  line: number;
  field?: string;
  reason: string;
  value?: unknown;
  /** The row's first identity key, when its identity fields mapped: who the row was. */
  identity?: string;
}

/**
 * Withheld: two or more rows of one export carry the same identity (all of
 * them are), or the record the row matched belongs to another source
 * (match.ts; `otherLines` is empty then).
 */
export interface ConflictAction {
  kind: 'conflict';
  line: number;
  keys: string[];
  /** The identity key the rows share, or that found the other source's record. */
  identity: string;
  otherLines: number[];
  reason: string;
}

/**
 * Withheld: another row of the export claims the same record and survives
 * by the job's `duplicates` rule (src/sync/survivors.ts).
 */
export interface DuplicateAction {
  kind: 'duplicate';
  line: number;
  /** The row's identity keys (empty for a row of an earlier batch found to lose later). */
  keys: string[];
  /** The row's CRM record: its strongest identity key. */
  record: string;
  /** The identity key it shares with the survivor. */
  identity: string;
  /** The row that keeps the record, as far as known when this row lost. */
  survivor: { line: number; record: string };
  reason: string;
}

export type WriteAction<B extends Body = Body> = CreateAction<B> | UpdateAction<B>;

export type Action<B extends Body = Body> =
  | CreateAction<B>
  | UpdateAction<B>
  | AdoptAction
  | UnchangedAction
  | SkipAction
  | UnsupportedAction
  | PendingAction<B>
  | InvalidAction
  | ConflictAction
  | DuplicateAction;

export type ActionKind = Action['kind'];

export const ACTION_KINDS: readonly ActionKind[] = [
  'create',
  'update',
  'adopt',
  'unchanged',
  'skip',
  'unsupported',
  'pending',
  'invalid',
  'conflict',
  'duplicate',
];

export function isWrite<B extends Body>(action: Action<B>): action is WriteAction<B> {
  return action.kind === 'create' || action.kind === 'update';
}

/** An invalid row, with the field and value at fault when there is one. */
export function invalidAction(
  line: number,
  reason: string,
  detail: { field?: string; value?: unknown; identity?: string } = {},
): InvalidAction {
  return {
    kind: 'invalid',
    line,
    reason,
    ...(detail.field !== undefined && { field: detail.field }),
    ...(detail.value !== undefined && { value: detail.value }),
    ...(detail.identity !== undefined && { identity: detail.identity }),
  };
}

/** A row withheld because `identity` is also carried by the rows on `otherLines`. */
export function conflictAction(
  entity: Entity,
  line: number,
  keys: string[],
  identity: string,
  otherLines: number[],
): ConflictAction {
  const others = [...otherLines].sort((a, b) => a - b);
  const where = others.length === 1 ? `line ${others[0]}` : `lines ${others.join(', ')}`;
  return {
    kind: 'conflict',
    line,
    keys,
    identity,
    otherLines: others,
    reason: `duplicate identity: ${describeIdentity(entity, identity)} is also on ${where}; all rows with it are withheld`,
  };
}

/** A CRM record as reports name it: its strongest identity key's value (`salesforce:003…`). */
export function recordName(key: string): string {
  return key.slice(key.indexOf(':') + 1);
}

/** How the survivor rule chose, for reports: `keep: newest by LastModifiedDate`. */
export function describeRule(keep: string, by: readonly string[] | undefined): string {
  return by === undefined || keep === 'first' || keep === 'last'
    ? `keep: ${keep}`
    : `keep: ${keep} by ${by.join(', ')}`;
}

/** A row withheld because the row on `survivor.line` keeps the record they both claim. */
export function duplicateAction(
  entity: Entity,
  row: { line: number; keys: string[]; record: string },
  identity: string,
  survivor: { line: number; record: string },
  rule: string,
): DuplicateAction {
  return {
    kind: 'duplicate',
    line: row.line,
    keys: row.keys,
    record: row.record,
    identity,
    survivor,
    reason:
      `duplicate of line ${survivor.line} (${recordName(survivor.record)}), which keeps the ` +
      `record: both have ${describeIdentity(entity, identity)} (${rule})`,
  };
}

/** How many actions of each kind (every kind present, zero when none). */
export function tally(actions: Iterable<Action>): Record<ActionKind, number> {
  const counts = Object.fromEntries(ACTION_KINDS.map((k) => [k, 0])) as Record<ActionKind, number>;
  for (const a of actions) counts[a.kind]++;
  return counts;
}
