import { describe, expect, it } from 'vitest';
import { sleep } from '../../src/sleep.js';

describe('sleep', () => {
  it('resolves after the wait', async () => {
    await expect(sleep(1)).resolves.toBeUndefined();
  });

  it('ends at once with the reason when its signal aborts, or was aborted before', async () => {
    const controller = new AbortController();
    // An hour: only the abort can end it within the test's time limit.
    const waiting = sleep(3_600_000, controller.signal);
    controller.abort(new Error('shutting down'));
    await expect(waiting).rejects.toThrow('shutting down');
    await expect(sleep(3_600_000, AbortSignal.abort(new Error('gone')))).rejects.toThrow('gone');
  });
});
