/**
 * The Dynamics 365 / Dataverse presets on Web API responses built from
 * Microsoft's documentation examples (no recorded response was found in a
 * public repository; see test/fixtures/real/SOURCES.md): GUID ids in any
 * case, annotation keys with dots and @, inactive accounts and users that are
 * not people.
 */
import { describe, expect, it } from 'vitest';
import {
  expectOnPlatform,
  failureLines,
  jsonRecords,
  syncTwice,
  useRealEngine,
} from './real-exports-harness.js';

const engine = useRealEngine();

const FORMATTED_OWNER = '_ownerid_value@OData.Community.Display.V1.FormattedValue';

describe('Dataverse Web API responses', () => {
  it('accounts: active accounts once under the lower-case GUID, inactive ones skipped', async () => {
    const h = engine();
    const accounts = jsonRecords('dynamics/accounts-web-api.json', 'value');
    const live = accounts.filter((a) => a.statecode !== 1);
    const inactive = accounts.filter((a) => a.statecode === 1);
    const { first, failures } = await syncTwice(h, {
      job: 'dynamics-accounts',
      preset: 'dynamics-accounts',
      entity: 'companies',
      file: 'dynamics/accounts-web-api.json',
      recordsPath: 'value',
    });
    expect(first.counts).toMatchObject({ read: 5, created: 4, invalid: 0, skipped: 1 });
    expect(failureLines(failures)).toEqual(
      inactive.map(
        (a) =>
          `skipped x:dynamics:account:${String(a.accountid)}: inactive in Dynamics (statecode 1)`,
      ),
    );
    await expectOnPlatform(
      h,
      'companies',
      live.map((a) => ({
        external_id: `dynamics:account:${String(a.accountid).toLowerCase()}`,
        name: a.name,
      })),
    );
    // The owner's formatted value, read through its annotation key.
    const litware = (await h.dump()).companies.find(
      (c) => c.external_id === 'dynamics:account:78914942-34cb-ed11-b596-0022481d68cd',
    );
    expect(JSON.parse(String(litware?.custom))).toMatchObject({
      owner: accounts[0]![FORMATTED_OWNER],
    });
  });

  it('systemusers: people once, application and support users skipped', async () => {
    const h = engine();
    const users = jsonRecords('dynamics/systemusers-web-api.json', 'value');
    const notPeople = users.filter((u) => [3, 4, 5].includes(Number(u.accessmode)));
    const people = users.filter((u) => !notPeople.includes(u));
    const { first, failures } = await syncTwice(h, {
      job: 'dynamics-systemusers',
      preset: 'dynamics-systemusers',
      entity: 'members',
      file: 'dynamics/systemusers-web-api.json',
      recordsPath: 'value',
    });
    expect(first.counts).toMatchObject({ read: 4, created: 2, invalid: 0, skipped: 2 });
    expect(failureLines(failures)).toEqual(
      notPeople
        .map(
          (u) =>
            `skipped x:dynamics:systemuser:${String(u.systemuserid)}: not a person of the org (accessmode ${Number(u.accessmode)})`,
        )
        .sort(),
    );
    await expectOnPlatform(
      h,
      'members',
      people.map((u) => ({
        external_id: `dynamics:systemuser:${String(u.systemuserid)}`,
        email: u.internalemailaddress,
      })),
    );
  });
});
