import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { diffFields } from '../../src/sync/diff.js';
import {
  describeIdentity,
  identityKeys,
  identityKeysOfPlatformRecord,
  noIdentityReason,
} from '../../src/sync/identity.js';
import { remoteValues } from '../../src/sync/remote.js';

describe('identityKeys', () => {
  it.each([
    [{ external_id: 'E1', crm_account_id: 'A1', crm_company_id: 42 }, ['x:E1', 'a:A1', 'c:42']],
    [{ crm_company_id: 42, crm_account_id: 'A1' }, ['a:A1', 'c:42']],
    [{ crm_company_id: 123456789012 }, ['c:123456789012']],
    [{ external_id: '  E1 ', crm_account_id: '' }, ['x:E1']],
    [{ external_id: '   ', crm_account_id: null, name: 'Acme' }, []],
    [{ name: 'Acme' }, []],
    // Not a number a record can be found by (JSON writes both as null).
    [{ crm_company_id: Number.NaN, crm_account_id: Infinity }, []],
  ])('companies %j → %j', (body, keys) => {
    expect(identityKeys('companies', body)).toEqual(keys);
  });

  it.each([
    [{ external_id: 'U1', email: 'Ann@Example.COM' }, ['x:U1', 'e:ann@example.com']],
    [{ email: ' ann@example.com ' }, ['e:ann@example.com']],
    [{ first_name: 'Ann' }, []],
  ])('members %j → %j', (body, keys) => {
    expect(identityKeys('members', body)).toEqual(keys);
  });

  it('gives the same keys for a listed platform record (nulls are empty)', () => {
    const listed = {
      id: 7,
      external_id: null,
      crm_account_id: 'A1',
      crm_company_id: 42,
      name: 'x',
    };
    expect(identityKeysOfPlatformRecord('companies', listed)).toEqual(['a:A1', 'c:42']);
    const member = { id: 9, email: 'ANN@example.com', external_id: null };
    expect(identityKeysOfPlatformRecord('members', member)).toEqual(['e:ann@example.com']);
  });

  it('keeps priority order whatever the key order of the body', () => {
    const field = fc.option(fc.string({ minLength: 1, maxLength: 8 }), { nil: undefined });
    fc.assert(
      fc.property(field, field, fc.option(fc.nat(), { nil: undefined }), (x, a, c) => {
        const entries = Object.entries({ crm_company_id: c, crm_account_id: a, external_id: x });
        const forward = identityKeys('companies', Object.fromEntries(entries));
        const backward = identityKeys('companies', Object.fromEntries(entries.reverse()));
        expect(backward).toEqual(forward);
        const tags = forward.map((k) => k[0]);
        expect(tags).toEqual(['x', 'a', 'c'].filter((t) => tags.includes(t)));
        if (x !== undefined && x.trim() !== '') expect(forward[0]).toBe(`x:${x.trim()}`);
      }),
    );
  });

  it('explains a missing identity with the field names', () => {
    expect(noIdentityReason('companies')).toBe(
      'no identity: external_id, crm_account_id and crm_company_id are all empty',
    );
    expect(noIdentityReason('members')).toBe('no identity: external_id and email are both empty');
    expect(describeIdentity('companies', 'a:0015g00000XyZ')).toBe('crm_account_id "0015g00000XyZ"');
    expect(describeIdentity('members', 'e:a:b@c.d')).toBe('email "a:b@c.d"');
    // A tag the entity does not have is named as it is.
    expect(describeIdentity('companies', 'e:a@b.c')).toBe('e "a@b.c"');
  });
});

describe('diffFields', () => {
  it('compares only the fields we send, deeply, with absent as null', () => {
    const before = { name: 'Acme', website: null, custom: 'keep', features: { b: 1, a: 2 } };
    const after = { name: 'Acme Inc', website: null, features: { a: 2, b: 1 }, external_id: 'E1' };
    expect(diffFields(before, after)).toEqual([
      { field: 'external_id', from: null, to: 'E1' },
      { field: 'name', from: 'Acme', to: 'Acme Inc' },
    ]);
  });

  it('treats an unknown before as all-new and skips undefined values', () => {
    expect(diffFields(undefined, { name: 'A', website: undefined })).toEqual([
      { field: 'name', from: null, to: 'A' },
    ]);
    // A field the body leaves undefined is not sent, so the platform's value is no change.
    expect(diffFields({ name: 'A', website: 'https://acme.test' }, { website: undefined })).toEqual(
      [],
    );
  });

  it('finds no change between a body and itself', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), (body) => {
        expect(diffFields(structuredClone(body), body)).toEqual([]);
      }),
    );
  });
});

describe('remoteValues', () => {
  it('keeps request fields only, nulls included, icons left out', () => {
    const listed = {
      id: 3,
      name: 'Acme',
      website: null,
      created_at: '2024-01-01T00:00:00Z',
      avatar: 'https://x/y.png',
      icon: 'https://x/icon.png',
      icon_base64: 'aWNvbg==',
      icon_delete: false,
      crm_company_id: 42,
    };
    // Strict: a request field the listing left out is no key at all.
    expect(remoteValues('companies', listed)).toStrictEqual({
      name: 'Acme',
      website: null,
      crm_company_id: 42,
    });
  });
});
