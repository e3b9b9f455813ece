/**
 * Chaos: Redis unreachable for 15 s in the middle of a 2,000-row sync. The
 * server is frozen (SIGSTOP), as a hung host or a network partition would
 * leave it: connections stay open but nothing answers, so no client sees an
 * error, only silence. Meanwhile the workers must not write (every write
 * goes through Redis first), and their `/readyz` must say not ready; once
 * Redis answers again (SIGCONT) they are ready again and finish the run,
 * with every valid row on the platform once, and a second run writes nothing.
 */
import { describe, expect, it } from 'vitest';
import {
  expectSecondRunWritesNothing,
  expectSynced,
  requests,
  sandboxStats,
  sleep,
  useChaos,
  type Chaos,
} from '../harness/chaos.js';
import type { CliProcess } from '../harness/cli.js';
import { freezeFor, serverPid, waitUntil } from '../harness/redis-topology.js';

// Six times the workers' job lock (2.5 s), with room for two rounds of
// `/readyz` probes, each up to its 2 s ping timeout.
const FROZEN_MS = 15_000;

/** The ops server's address, from the worker's "ops server listening" line. */
async function opsUrl(w: CliProcess): Promise<string> {
  const line = await w.waitForLine(/"msg":"ops server listening"/);
  const url = /"(?:url|ops)":"(http[^"]+)"/.exec(line)?.[1];
  if (!url) throw new Error(`no address in ${line}`);
  return url;
}

/** `/readyz`'s status, or 0 when it gives no answer within 5 s. */
async function readyz(url: string): Promise<{ status: number; body: string }> {
  try {
    const res = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(5_000) });
    return { status: res.status, body: await res.text() };
  } catch (err) {
    return { status: 0, body: String(err) };
  }
}

async function writes(c: Chaos): Promise<number> {
  const stats = await sandboxStats(c);
  return requests(stats, 'POST', '/companies') + requests(stats, 'PUT', '/companies/:id');
}

const chaos = useChaos();

describe('chaos: Redis frozen for 15 s mid-run', () => {
  it(
    'workers wait, say not ready, resume, and nothing is doubled',
    { timeout: 150_000 },
    async () => {
      const c = await chaos({
        sandbox: { latencyMs: 10, seed: 30 },
        // Slow enough that a third of the rows is written well before the end.
        env: { PLATFORM_RATE_LIMIT: 200 },
      });
      const urls = [await opsUrl(await c.startWorker()), await opsUrl(await c.startWorker())];
      for (const url of urls) expect((await readyz(url)).status, `${url} before`).toBe(200);
      const pid = await serverPid(c.redis);
      const runId = await c.enqueue();

      let frozen = false;
      let writesAtFreeze = 0;
      const frozenWrites: number[] = [];
      const probes: { status: number; body: string }[] = [];
      let readyAgainMs = 0;
      const run = await c.waitForRun(runId, {
        timeoutMs: 120_000,
        onPoll: async () => {
          if (frozen) return;
          writesAtFreeze = await writes(c);
          if (writesAtFreeze < c.expected.valid.size / 3) return;
          frozen = true;
          const frozenAt = Date.now();
          await freezeFor(pid, FROZEN_MS, async () => {
            // Writes already past Redis when it froze may still land; then nothing more.
            await sleep(3_000);
            frozenWrites.push(await writes(c));
            while (Date.now() - frozenAt < FROZEN_MS - 6_000) {
              probes.push(...(await Promise.all(urls.map(readyz))));
              await sleep(2_000);
            }
            frozenWrites.push(await writes(c));
          });
          const resumedAt = Date.now();
          await waitUntil(
            'workers ready again',
            async () => (await Promise.all(urls.map(readyz))).every((r) => r.status === 200),
            30_000,
          );
          readyAgainMs = Date.now() - resumedAt;
        },
      });

      expect(frozen, 'Redis was frozen before the run ended').toBe(true);
      expect(writesAtFreeze).toBeLessThan(c.expected.valid.size);
      // No write started while Redis was silent.
      expect(frozenWrites[1], 'writes while Redis was frozen').toBe(frozenWrites[0]);
      // Every probe while frozen answered, and answered "not ready" because of Redis.
      expect(probes.length).toBeGreaterThanOrEqual(2 * urls.length);
      for (const p of probes) {
        expect(p.status, p.body).toBe(503);
        expect(JSON.parse(p.body)).toMatchObject({ status: 'unready' });
        expect(p.body).toContain('redis');
      }
      expect(readyAgainMs).toBeLessThan(30_000);
      // Both workers lived through it and finished the run.
      expect(c.workers).toHaveLength(2);
      await expectSynced(c, run);
      await expectSecondRunWritesNothing(c);
    },
  );
});
