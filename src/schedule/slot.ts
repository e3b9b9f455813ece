/**
 * Schedule slots, pure. A slot is one scheduled instant of one job, written
 * as an ISO timestamp in UTC truncated to the second (cron's finest field),
 * so every replica names the same firing the same way whatever its timezone.
 */
import { CronExpressionParser } from 'cron-parser';
import cron from 'node-cron';
import { isTimeZone } from '../time-zone.js';

/** The slot of a scheduled instant: ISO 8601 in UTC, to the second. */
export function slotOf(date: Date): string {
  return new Date(Math.floor(date.getTime() / 1_000) * 1_000).toISOString();
}

/** The Redis key that claims one slot of one job (the prefix carries the hash tag). */
export function slotClaimKey(prefix: string, jobName: string, slot: string): string {
  return `${prefix}:schedule:claim:${jobName}:${slot}`;
}

/** The Redis key that remembers the last slot a scheduler claimed for a job. */
export function lastSlotKey(prefix: string, jobName: string): string {
  return `${prefix}:schedule:last:${jobName}`;
}

/** Every problem with a schedule and its timezone, or an empty list. */
export function scheduleProblems(schedule: string, timezone?: string): string[] {
  const problems: string[] = [];
  const detailed = cron.validateDetailed(schedule);
  if (!detailed.valid) {
    for (const e of detailed.errors) problems.push(`schedule: ${e.field}: ${e.message}`);
    if (detailed.errors.length === 0)
      problems.push(`schedule: "${schedule}" is not a cron expression`);
  }
  if (timezone !== undefined && !isTimeZone(timezone)) {
    problems.push(`timezone: "${timezone}" is not an IANA time zone`);
  }
  return problems;
}

export interface MissedSlots {
  /** How many slots fell strictly between the last claimed slot and now (at most `limit`). */
  count: number;
  /** True when there were more than `limit`; `count` then stops at the limit. */
  truncated: boolean;
  first?: string;
  last?: string;
}

/**
 * Slots of `schedule` after `lastSlot` and before `now`: the firings nobody
 * claimed because no scheduler was running. `now` itself is not missed (its
 * task may still fire).
 */
export function missedSlots(opts: {
  schedule: string;
  timezone?: string;
  lastSlot: string;
  now: Date;
  limit?: number;
}): MissedSlots {
  const limit = opts.limit ?? 1_000;
  const nowSlot = slotOf(opts.now);
  const expression = CronExpressionParser.parse(opts.schedule, {
    currentDate: new Date(opts.lastSlot),
    tz: opts.timezone ?? 'UTC',
  });
  const result: MissedSlots = { count: 0, truncated: false };
  for (;;) {
    const next = slotOf(expression.next().toDate());
    if (next >= nowSlot) break;
    if (result.count === limit) {
      result.truncated = true;
      break;
    }
    result.count += 1;
    result.first ??= next;
    result.last = next;
  }
  return result;
}
