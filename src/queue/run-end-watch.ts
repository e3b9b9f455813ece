/**
 * Word of a run job's end from the runs queue's events stream (BullMQ's
 * `completed` and `failed`), so that a caller waiting for a run (`crm-sync
 * run --wait`, `crm-sync show --wait`) returns as its job ends rather than
 * at its next read of the run record. A run can also end while its job
 * sleeps (a run failed from a write wakes its job a poll later), and an
 * event can be missed (trimmed from the stream, which keeps about 2,000,
 * before it was read; or the stream unreadable): the waiter reads the
 * record at its own pace as well, and this only cuts a wait short.
 */
import { QueueEvents, QueueKeys } from 'bullmq';
import { Cluster } from 'ioredis';
import type { RedisClient } from '../redis/connection.js';
import { QueueName } from './queues.js';

export interface RunEndWatch {
  /**
   * Resolves after `ms`, or as soon as the run's job ends; at once when it
   * ended since the last wait (each end cuts one wait short).
   */
  wait(ms: number): Promise<void>;
  close(): Promise<void>;
}

/** Watches the runs queue under `prefix` (BullMQ's) for the end of the job of `runId`. */
export async function watchRunEnd(
  connection: RedisClient,
  prefix: string,
  runId: string,
): Promise<RunEndWatch> {
  // From the stream's last entry now: an end that comes before the first XREAD is still read.
  const stream = new QueueKeys(prefix).toKey(QueueName.runs, 'events');
  const [last] = await connection.xrevrange(stream, '+', '-', 'COUNT', 1);
  // XREAD BLOCK holds its connection: a connection of its own, whose commands
  // wait for a reconnect however long it takes (BullMQ's rule for blocking ones).
  const blocking =
    connection instanceof Cluster
      ? connection.duplicate(undefined, {
          redisOptions: { ...connection.options.redisOptions, maxRetriesPerRequest: null },
        })
      : connection.duplicate({ maxRetriesPerRequest: null });
  const events = new QueueEvents(QueueName.runs, {
    connection: blocking,
    prefix,
    lastEventId: last?.[0] ?? '0-0',
  });
  // The record is read anyway: a broken stream only leaves the waiter to its reads.
  events.on('error', () => undefined);
  let ended = false;
  let wake: (() => void) | undefined;
  const onEnd = ({ jobId }: { jobId: string }): void => {
    if (jobId !== runId) return;
    ended = true;
    wake?.();
  };
  events.on('completed', onEnd);
  events.on('failed', onEnd);
  try {
    await events.waitUntilReady();
  } catch (err) {
    await events.close().catch(() => undefined);
    blocking.disconnect();
    throw err;
  }
  return {
    wait(ms) {
      return new Promise<void>((resolve) => {
        const done = (): void => {
          clearTimeout(timer);
          wake = undefined;
          ended = false;
          resolve();
        };
        const timer = setTimeout(done, ms);
        if (ended) done();
        else wake = done;
      });
    },
    async close() {
      wake?.();
      await events.close().catch(() => undefined);
      blocking.disconnect();
    },
  };
}
