/**
 * The writer lease: which worker process takes write chunks. Every process
 * calls src/queue/lua/writer-lease-2.lua once a tick (TICK_MS); the first to
 * find the lease free holds it while it renews it, and writes. The others
 * stand by (their write worker paused, src/engine/worker-service.ts) and
 * write only while the writer calls for help and their machine has idle
 * CPU (src/queue/writer-help.ts). A writer that dies, hangs or loses Redis
 * for LEASE_MS is replaced by the next process to tick; one that stops
 * gives the lease up at once.
 *
 * The lease decides who spends CPU on writes, not whether a write is done
 * once: that is the write path's claim (src/state/write-steps.ts). Two
 * processes writing for a tick while the lease changes hands is harmless.
 */
import { randomBytes } from 'node:crypto';
import { cpus, hostname } from 'node:os';
import type { Logger } from '../log.js';
import type { RedisClient } from '../redis/connection.js';
import { callScript } from '../redis/scripts.js';
import {
  HELP_MS,
  LEASE_MS,
  NO_CALL,
  TICK_MS,
  answersHelp,
  nextCall,
  type HelpCall,
  type PaceSample,
} from './writer-help.js';

export const writerKey = (prefix: string): string => `${prefix}:writer`;
export const writerHelpKey = (prefix: string): string => `${prefix}:writer:help`;

/** What this process does with write chunks: take them, or leave them to the writer. */
export type WriteRole = 'write' | 'stand by';

export interface WriterLeaseOptions {
  redis: RedisClient;
  prefix: string;
  /** This tick's pace (asked of the writer only). */
  sample: () => Promise<PaceSample>;
  /** Called when the role changes (and once at start); awaited before the next tick. */
  onRole: (role: WriteRole, why: 'lease' | 'help' | 'none') => Promise<void>;
  logger?: Logger;
  /** Idle cores of this machine since the last call (default `spareCoresMeter()`). */
  spareCores?: () => number;
  /** Default: host, pid and random bytes (what the lease key holds; no secret). */
  token?: string;
}

/**
 * Idle cores of the machine since the previous call (the first: since the
 * meter was made), from the kernel's idle time of every CPU (`os.cpus()`).
 * In a container these are the host's CPUs, whatever the container's own
 * CPU limit.
 */
export function spareCoresMeter(): () => number {
  const idle = () => cpus().reduce((n, c) => n + c.times.idle, 0);
  let last = { at: performance.now(), idle: idle() };
  return () => {
    const now = { at: performance.now(), idle: idle() };
    const cores = (now.idle - last.idle) / Math.max(1, now.at - last.at);
    last = now;
    return cores;
  };
}

/** Samples kept: enough to cover BEHIND_MS at TICK_MS, with slack for late ticks. */
const KEPT_SAMPLES = 16;

export class WriterLease {
  readonly token: string;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private holds = false;
  /** This process's own call, while it writes. */
  private call: HelpCall = NO_CALL;
  private role: WriteRole | undefined;
  private samples: PaceSample[] = [];
  private ticking: Promise<void> = Promise.resolve();
  private readonly spareCores: () => number;

  constructor(private readonly opts: WriterLeaseOptions) {
    this.token = opts.token ?? `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
    this.spareCores = opts.spareCores ?? spareCoresMeter();
  }

  /** True while this process holds the lease (as of its last tick). */
  get writer(): boolean {
    return this.holds;
  }

  /** Takes the lease or learns who has it, sets the role, and ticks from then on. */
  async start(): Promise<void> {
    await this.tick();
    this.schedule();
  }

  /** Stops ticking and gives the lease up if this process holds it. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.ticking;
    if (!this.holds) return;
    this.holds = false;
    await callScript(this.opts.redis, 'release-lock', writerKey(this.opts.prefix), this.token);
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.ticking = this.tick()
        .catch((err: unknown) =>
          this.opts.logger?.warn({ err }, 'writer lease: tick failed; retrying'),
        )
        .finally(() => this.schedule());
    }, TICK_MS);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    let ask = '-';
    if (this.holds) {
      this.samples.push(await this.opts.sample());
      if (this.samples.length > KEPT_SAMPLES) this.samples.shift();
      const next = nextCall(this.samples, this.call);
      if (next.state !== this.call.state) this.logCall(next);
      this.call = next;
      ask = next.state === 'called' ? '1' : '0';
    }
    const [holds, help] = (await callScript(
      this.opts.redis,
      'writer-lease',
      writerKey(this.opts.prefix),
      writerHelpKey(this.opts.prefix),
      this.token,
      LEASE_MS,
      ask,
      HELP_MS,
    )) as [number, number];
    const spare = this.spareCores();
    if (this.stopped) return;
    if (holds !== 1) {
      this.samples = [];
      this.call = NO_CALL;
    }
    this.holds = holds === 1;
    const helps = !this.holds && answersHelp(help === 1, this.role === 'write', spare);
    const role: WriteRole = this.holds || helps ? 'write' : 'stand by';
    if (role !== this.role) {
      // Taken only once carried out: one that failed is tried again at the next tick.
      await this.opts.onRole(role, this.holds ? 'lease' : helps ? 'help' : 'none');
      this.role = role;
    }
  }

  private logCall(next: HelpCall): void {
    const log = this.opts.logger;
    if (next.state === 'called') {
      log?.info(
        { best: Math.round(next.best) },
        'writer behind its pace: worker processes with idle CPU help',
      );
    } else if (next.state === 'withdrawn') {
      log?.info('help did not raise the rate: the writer goes on alone until the queue empties');
    }
  }
}
