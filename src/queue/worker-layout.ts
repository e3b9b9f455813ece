/**
 * Workers name their queue connections by the state layout they write
 * (BullMQ's worker `name`: the connection's CLIENT SETNAME becomes
 * `<prefix>:<queue>:w:layout-<N>`), so that `crm-sync migrate` can see,
 * through BullMQ's worker list (CLIENT LIST), whether a worker of another
 * release is still connected: releases before layout 2 set no name at all.
 */
import type { Queue } from 'bullmq';
import { LAYOUT_VERSION } from '../state/keys.js';
import type { OtherWorkers } from '../state/migrations.js';

/** The BullMQ worker name of this release's workers. */
export const WORKER_NAME = `layout-${LAYOUT_VERSION}`;

// What BullMQ answers instead of a list when the server refuses CLIENT LIST.
const UNLISTED = /does not support client list/i;

/** The connections of workers of `queues` that are not named by this layout. */
export async function otherWorkers(queues: readonly Queue[]): Promise<OtherWorkers> {
  const names: string[] = [];
  for (const queue of queues) {
    const workers = await queue.getWorkers();
    for (const w of workers) {
      const raw = w.rawname ?? w.name ?? '';
      if (UNLISTED.test(w.name ?? '')) return { names, unknown: true };
      if (!raw.endsWith(`:w:${WORKER_NAME}`)) names.push(`${queue.name} ${w.addr ?? raw}`);
    }
  }
  return { names, unknown: false };
}
