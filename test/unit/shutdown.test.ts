import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { createShutdown, workerCloser, type SignalSource } from '../../src/ops/shutdown.js';

function signals(): SignalSource & { emit(s: string): boolean; count(s: string): number } {
  const e = new EventEmitter();
  return {
    on: (s, l) => e.on(s, l),
    off: (s, l) => e.off(s, l),
    emit: (s) => e.emit(s),
    count: (s) => e.listenerCount(s),
  };
}

const tick = (ms = 0): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('createShutdown', () => {
  it('closes in reverse order of registration, once', async () => {
    const order: string[] = [];
    const s = createShutdown(undefined, { exit: () => {} });
    s.register('redis', () => void order.push('redis'));
    s.register('queue', async () => {
      await tick(5);
      order.push('queue');
    });
    s.register('worker', () => void order.push('worker'));
    expect(s.stopping).toBe(false);
    const first = s.shutdown();
    const second = s.shutdown();
    expect(second).toBe(first);
    expect(s.stopping).toBe(true);
    expect(await first).toEqual({ clean: true, failed: [], timedOut: [] });
    expect(order).toEqual(['worker', 'queue', 'redis']);
    expect(() => s.register('late', () => {})).toThrow(/shutdown has begun/);
  });

  it('goes on after a closer fails, and reports it', async () => {
    const order: string[] = [];
    const s = createShutdown(undefined, { exit: () => {} });
    s.register('a', () => void order.push('a'));
    s.register('b', () => {
      throw new Error('boom');
    });
    const result = await s.shutdown();
    expect(order).toEqual(['a']);
    expect(result).toEqual({ clean: false, failed: ['b'], timedOut: [] });
  });

  it('stops waiting at the deadline and tells the closer', async () => {
    let aborted = false;
    const s = createShutdown(undefined, { deadlineMs: 50, exit: () => {} });
    s.register('redis', () => {});
    s.register('worker', ({ deadline }) => {
      deadline.addEventListener('abort', () => (aborted = true));
      return new Promise<void>(() => {});
    });
    const started = Date.now();
    const result = await s.shutdown();
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(aborted).toBe(true);
    expect(result).toEqual({ clean: false, failed: [], timedOut: ['worker', 'redis'] });
  });

  it('the first signal shuts down gracefully and exits 0; listeners are removed', async () => {
    const src = signals();
    const exits: number[] = [];
    const closed: string[] = [];
    const s = createShutdown(undefined, { source: src, exit: (c) => exits.push(c) });
    s.register('worker', async () => {
      await tick(10);
      closed.push('worker');
    });
    s.listen();
    expect(src.count('SIGTERM')).toBe(1);
    src.emit('SIGTERM');
    expect(s.stopping).toBe(true);
    await s.shutdown();
    await tick();
    expect(closed).toEqual(['worker']);
    expect(exits).toEqual([0]);
    expect(src.count('SIGTERM')).toBe(0);
  });

  it('a second signal forces the exit at once', async () => {
    const src = signals();
    const exits: number[] = [];
    const s = createShutdown(undefined, { source: src, exit: (c) => exits.push(c) });
    s.register('stuck', () => new Promise<void>(() => {}));
    s.listen();
    src.emit('SIGINT');
    await tick();
    expect(exits).toEqual([]);
    src.emit('SIGTERM');
    expect(exits).toEqual([1]);
  });
});

describe('workerCloser', () => {
  it('waits for the worker to close, and aborts its jobs at the deadline', async () => {
    const calls: string[] = [];
    let finish!: () => void;
    const worker = {
      close: (force?: boolean) => {
        calls.push(`close(${force ?? ''})`);
        return new Promise<void>((r) => (finish = r));
      },
      cancelAllJobs: (reason?: string) => {
        calls.push(`cancel:${reason}`);
        finish();
      },
    };
    const s = createShutdown(undefined, { deadlineMs: 30, exit: () => {} });
    s.register('worker', workerCloser(worker));
    const result = await s.shutdown();
    expect(calls).toEqual(['close()', 'cancel:shutdown deadline passed']);
    expect(result.timedOut).toEqual(['worker']);
  });

  it('does not cancel when jobs finish in time', async () => {
    const calls: string[] = [];
    const worker = {
      close: async () => void calls.push('close'),
      cancelAllJobs: () => void calls.push('cancel'),
    };
    const s = createShutdown(undefined, { deadlineMs: 1_000, exit: () => {} });
    s.register('worker', workerCloser(worker));
    expect((await s.shutdown()).clean).toBe(true);
    expect(calls).toEqual(['close']);
  });
});
