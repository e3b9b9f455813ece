/**
 * `crm-sync audit ENTITY`, the I/O side: lists every record of the entity on
 * the platform (the listing code a run uses, paced and retried the same way),
 * reads what our state says of every identity key listed and of pending
 * creates, and hands both to the pure audit (src/sync/audit.ts). Read-only:
 * nothing is written to the platform or to the state, not even the index.
 */
import type { Logger } from '../log.js';
import type { PlatformClient } from '../platform/client.js';
import type { RetrySettings } from '../platform/retry-policy.js';
import type { Listing } from '../state/record-lookup.js';
import type { StateStore } from '../state/store.js';
import {
  auditListing,
  type AuditOptions,
  type AuditRecord,
  type AuditReport,
} from '../sync/audit.js';
import { identityKeysOfPlatformRecord, type Entity } from '../sync/identity.js';
import { DEFAULT_ENGINE_SETTINGS } from './context.js';
import { platformPages } from './reconcile.js';

export interface AuditDeps {
  store: StateStore;
  client: PlatformClient;
  logger: Logger;
  /** Requests per second to the platform (the listing's ceiling) and the retry policy's numbers. */
  rateLimit: number;
  retry: RetrySettings;
}

/** Identity keys per state lookup: one lookup is at most three round trips. */
const LOOKUP_BATCH = 2_000;

/** A listing that knows nothing: lookups then answer from our state alone. */
const NO_LISTING: Listing = { idOf: () => undefined, valuesOf: () => undefined };

/** Lists the entity, reads our state of what it found, and audits the two. */
export async function auditEntity(
  deps: AuditDeps,
  entity: Entity,
  opts: AuditOptions & { signal?: AbortSignal } = {},
): Promise<AuditReport> {
  const { store, logger } = deps;
  const started = Date.now();
  const listing = {
    client: deps.client,
    logger,
    settings: { ...DEFAULT_ENGINE_SETTINGS, rateLimit: deps.rateLimit, retry: deps.retry },
  };
  const records: AuditRecord[] = [];
  let withoutId = 0;
  for await (const page of platformPages(listing, entity, opts.signal)) {
    for (const listed of page) {
      if (typeof listed.id !== 'number') {
        withoutId++;
        continue;
      }
      const createdBy = listed.created_by;
      records.push({
        id: listed.id,
        keys: identityKeysOfPlatformRecord(entity, listed),
        ...(typeof createdBy === 'string' && { createdBy }),
      });
    }
  }
  if (withoutId > 0) logger.warn({ entity, records: withoutId }, 'listed records without an id');

  const keys = [...new Set(records.flatMap((r) => r.keys))];
  const stateIds = new Map<string, number>();
  for (let i = 0; i < keys.length; i += LOOKUP_BATCH) {
    const batch = keys.slice(i, i + LOOKUP_BATCH);
    // One key per entry: what our state maps each key to, not a row's strongest match.
    const known = await store.records.lookup(
      entity,
      batch.map((key) => ({ keys: [key] })),
      { listing: NO_LISTING },
    );
    batch.forEach((key, n) => {
      const id = known[n]?.platformId;
      if (id !== undefined) stateIds.set(key, id);
    });
  }
  const pending = new Map((await store.records.listPending(entity)).map((p) => [p.key, p.runId]));

  const report = auditListing(
    entity,
    records,
    { idOf: (key) => stateIds.get(key), pendingRunOf: (key) => pending.get(key) },
    opts.createdBy !== undefined ? { createdBy: opts.createdBy } : {},
  );
  logger.info(
    {
      entity,
      listed: report.listed,
      tracked: report.tracked,
      problems: report.problems,
      ms: Date.now() - started,
    },
    'audit done',
  );
  return report;
}
