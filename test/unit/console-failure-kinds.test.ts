import { describe, expect, it } from 'vitest';
import { FAILURE_KINDS } from '../../src/state/failure-kinds.js';
// @ts-expect-error the console's modules are plain ES modules without types (no DOM at import)
import { KINDS } from '../../src/ops/console/views/failures.js';

describe('the console’s failure filter', () => {
  it('offers every kind the API filters by, in the same order, and no other', () => {
    expect(KINDS).toEqual([...FAILURE_KINDS]);
  });
});
