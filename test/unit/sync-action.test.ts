/**
 * The action records of src/sync/action.ts: which kinds are writes, how a
 * run's actions are counted, and what an invalid or duplicate row reports.
 */
import { describe, expect, it } from 'vitest';
import {
  describeRule,
  duplicateAction,
  invalidAction,
  isWrite,
  recordName,
  tally,
  type Action,
} from '../../src/sync/action.js';

/** One action of every kind, in the order the run summary lists them. */
const oneOfEach: Action[] = [
  { kind: 'create', line: 2, keys: ['x:A'], hash: 'h', body: {} },
  { kind: 'update', line: 3, keys: ['x:B'], hash: 'h', body: {}, platformId: 1 },
  { kind: 'adopt', line: 4, keys: ['x:C'], hash: 'h', platformId: 2 },
  { kind: 'unchanged', line: 5, keys: ['x:D'], platformId: 3 },
  { kind: 'skip', line: 6, keys: ['x:E'], reason: 'r' },
  { kind: 'unsupported', line: 7, keys: ['e:f@x.test'], platformId: 4, reason: 'r' },
  {
    kind: 'pending',
    line: 8,
    keys: ['x:G'],
    hash: 'h',
    body: {},
    pending: { runId: 'r1', since: 1 },
    reason: 'r',
  },
  { kind: 'invalid', line: 9, reason: 'r' },
  { kind: 'conflict', line: 10, keys: ['x:H'], identity: 'x:H', otherLines: [11], reason: 'r' },
  {
    kind: 'duplicate',
    line: 12,
    keys: ['x:I'],
    record: 'x:I',
    identity: 'c:1',
    survivor: { line: 13, record: 'x:J' },
    reason: 'r',
  },
];

describe('isWrite', () => {
  it('is true for create and update only: the actions that send a request', () => {
    expect(oneOfEach.filter(isWrite).map((a) => a.kind)).toEqual(['create', 'update']);
  });
});

describe('tally', () => {
  it('counts every kind, zero when none', () => {
    expect(tally([])).toEqual({
      create: 0,
      update: 0,
      adopt: 0,
      unchanged: 0,
      skip: 0,
      unsupported: 0,
      pending: 0,
      invalid: 0,
      conflict: 0,
      duplicate: 0,
    });
    expect(tally([...oneOfEach, oneOfEach[2]!, oneOfEach[9]!, oneOfEach[9]!])).toEqual({
      create: 1,
      update: 1,
      adopt: 2,
      unchanged: 1,
      skip: 1,
      unsupported: 1,
      pending: 1,
      invalid: 1,
      conflict: 1,
      duplicate: 3,
    });
  });
});

describe('invalidAction', () => {
  it('carries the field, the value and the identity given, and nothing else', () => {
    expect(
      invalidAction(7, 'not an e-mail address', {
        field: 'email',
        value: 'x@',
        identity: 'x:hs:7',
      }),
    ).toStrictEqual({
      kind: 'invalid',
      line: 7,
      reason: 'not an e-mail address',
      field: 'email',
      value: 'x@',
      identity: 'x:hs:7',
    });
    expect(invalidAction(8, 'no identity')).toStrictEqual({
      kind: 'invalid',
      line: 8,
      reason: 'no identity',
    });
    // A value of null or an empty text is still the value at fault.
    expect(invalidAction(9, 'bad', { value: '' })).toStrictEqual({
      kind: 'invalid',
      line: 9,
      reason: 'bad',
      value: '',
    });
  });
});

describe('recordName and describeRule', () => {
  it('names a CRM record by its key without the tag', () => {
    expect(recordName('x:salesforce:003A')).toBe('salesforce:003A');
    expect(recordName('e:jane@example.com')).toBe('jane@example.com');
  });

  it('says how the survivor was chosen', () => {
    expect(describeRule('newest', ['LastModifiedDate', 'CreatedDate'])).toBe(
      'keep: newest by LastModifiedDate, CreatedDate',
    );
    expect(describeRule('oldest', ['CreatedDate'])).toBe('keep: oldest by CreatedDate');
    expect(describeRule('newest', undefined)).toBe('keep: newest');
    expect(describeRule('first', ['CreatedDate'])).toBe('keep: first');
    expect(describeRule('last', ['CreatedDate'])).toBe('keep: last');
  });
});

describe('duplicateAction', () => {
  it('names the survivor, the shared identity and the rule', () => {
    expect(
      duplicateAction(
        'members',
        { line: 14, keys: ['x:hs:2', 'e:jane@example.com'], record: 'x:hs:2' },
        'e:jane@example.com',
        { line: 3, record: 'x:hs:1' },
        'keep: newest by lastmodifieddate',
      ),
    ).toStrictEqual({
      kind: 'duplicate',
      line: 14,
      keys: ['x:hs:2', 'e:jane@example.com'],
      record: 'x:hs:2',
      identity: 'e:jane@example.com',
      survivor: { line: 3, record: 'x:hs:1' },
      reason:
        'duplicate of line 3 (hs:1), which keeps the record: both have email "jane@example.com" ' +
        '(keep: newest by lastmodifieddate)',
    });
  });
});
