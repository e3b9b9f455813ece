/**
 * How many runs are kept: the newest `keep` runs of each job definition. A
 * run beyond that, oldest first, is forgotten once it has ended: its record,
 * its failure rows, whatever progress keys it left (a run that failed while
 * writing leaves its settled lines), its entries in the run lists, and its
 * number in `runs:ids`. Record states still hold that number (a row left
 * unchanged is never committed again), so nothing decides by it alone: whose
 * record it is comes from the job number beside it. Without this, every run
 * would stay in Redis for ever: a job scheduled every minute adds half a
 * million run records a year.
 *
 * A run that has not ended is never forgotten, however old: one waiting for
 * its writes still needs its record.
 */
import { DEFAULT_RUN_HISTORY } from '../defaults.js';
import type { RedisClient } from '../redis/connection.js';
import { redisCall } from './errors.js';
import type { KeyLayout } from './keys.js';

/** Runs kept per job definition when nothing else is configured. */

/** Runs forgotten per script call: the call stays short even after the setting is lowered. */
const BATCH = 100;
/** Runs looked at per prune: a backlog (the setting lowered) is worked off over the next runs. */
const MOST = 10 * BATCH;

// KEYS: the all-runs list, the job's run list, the run numbers, then per run
// its record, its failure rows and its progress keys (`per` keys each).
// ARGV: `per`, then the run ids. Returns how many runs were forgotten.
const FORGET = `
local per = tonumber(ARGV[1])
local n = 0
for i = 2, #ARGV do
  local id = ARGV[i]
  local base = 3 + (i - 2) * per
  local status = redis.call('HGET', KEYS[base + 1], 'status')
  if status == false or status == 'completed' or status == 'failed' or status == 'stopped'
    or status == 'cancelled' then
    for k = base + 1, base + per do redis.call('UNLINK', KEYS[k]) end
    redis.call('ZREM', KEYS[1], id)
    redis.call('ZREM', KEYS[2], id)
    local number = redis.call('HGET', KEYS[3], 'r:' .. id)
    if number then redis.call('HDEL', KEYS[3], 'r:' .. id, 's:' .. number) end
    n = n + 1
  end
end
return n
`;

export class RunRetention {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: KeyLayout,
    /** Runs kept per job definition (at least 1). */
    readonly keep: number = DEFAULT_RUN_HISTORY,
  ) {
    if (!Number.isInteger(keep) || keep < 1)
      throw new RangeError(`runs kept per job must be a whole number of at least 1, not ${keep}`);
  }

  /**
   * Forgets the runs of `job` beyond the newest `keep` that have ended;
   * returns how many. Safe to call from several processes at once: a run
   * forgotten twice is forgotten once.
   */
  async prune(job: string): Promise<number> {
    const k = this.keys;
    const total: number = await redisCall('counting runs', () =>
      this.redis.zcard(k.runsOfJob(job)),
    );
    const excess = Math.min(total - this.keep, MOST);
    if (excess <= 0) return 0;
    const oldest: string[] = await redisCall('listing old runs', () =>
      this.redis.zrange(k.runsOfJob(job), '0', String(excess - 1)),
    );
    let forgotten = 0;
    for (let i = 0; i < oldest.length; i += BATCH) {
      const ids = oldest.slice(i, i + BATCH);
      const perRun = ids.map((id) => [k.run(id), k.failures(id), ...k.progress(id)]);
      const per = perRun[0]!.length;
      const reply = await redisCall('forgetting old runs', () =>
        this.redis.eval(
          FORGET,
          3 + ids.length * per,
          k.runsAll(),
          k.runsOfJob(job),
          k.runIds(),
          ...perRun.flat(),
          String(per),
          ...ids,
        ),
      );
      forgotten += Number(reply);
    }
    return forgotten;
  }
}
