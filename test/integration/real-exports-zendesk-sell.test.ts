/**
 * The Zendesk Sell presets on the `/v2/contacts` list shape (`items`, each
 * `{data: {...}}`, read with `recordsPath: items` and `data.` paths), from
 * Zendesk's own test fixtures: one page of organizations
 * (`is_organization: true`) and one of people trimmed to a few fields (no
 * `is_organization`, no e-mail).
 */
import { describe, expect, it } from 'vitest';
import {
  expectAllSynced,
  failureLines,
  jsonRecords,
  syncTwice,
  useRealEngine,
} from './real-exports-harness.js';

const engine = useRealEngine();

type Item = { data: Record<string, unknown> };

const items = (file: string) => jsonRecords(`zendesk-sell/${file}`, 'items') as unknown as Item[];

describe('real Zendesk Sell contacts lists', () => {
  it('organizations: each organization once, by its id', async () => {
    const h = engine();
    const orgs = items('contacts-organizations-api-v2.json');
    expect(orgs.every((i) => i.data.is_organization === true)).toBe(true);
    await expectAllSynced(
      h,
      {
        job: 'zendesk-sell-organizations',
        preset: 'zendesk-sell-organizations',
        entity: 'companies',
        file: 'zendesk-sell/contacts-organizations-api-v2.json',
        recordsPath: 'items',
      },
      2,
      orgs.map((i) => ({
        external_id: `zendesk-sell:organization:${String(i.data.id)}`,
        name: i.data.name,
      })),
    );
  });

  it('organizations preset on people without is_organization: every row skipped, none synced as a company', async () => {
    const h = engine();
    const people = items('contacts-people-api-v2.json');
    expect(people.every((i) => !('is_organization' in i.data))).toBe(true);
    const { first, failures } = await syncTwice(h, {
      job: 'zendesk-sell-organizations-of-people',
      preset: 'zendesk-sell-organizations',
      entity: 'companies',
      file: 'zendesk-sell/contacts-people-api-v2.json',
      recordsPath: 'items',
    });
    expect(first.counts).toMatchObject({ read: 2, created: 0, skipped: 2, invalid: 0 });
    expect(failureLines(failures)).toEqual(
      people.map(
        (i) =>
          `skipped x:zendesk-sell:organization:${String(i.data.id)}: not marked as an organization (no is_organization)`,
      ),
    );
  });

  it('people preset on a page of organizations: every row skipped; the e-mail path is not checked against them', async () => {
    const h = engine();
    const orgs = items('contacts-organizations-api-v2.json');
    const { first, failures } = await syncTwice(h, {
      job: 'zendesk-sell-people-of-organizations',
      preset: 'zendesk-sell-people',
      entity: 'members',
      file: 'zendesk-sell/contacts-organizations-api-v2.json',
      recordsPath: 'items',
    });
    expect(first.counts).toMatchObject({ read: 2, created: 0, skipped: 2, invalid: 0 });
    expect(failures.map((f) => [f.kind, f.field, f.reason])).toEqual(
      orgs.map(() => [
        'skipped',
        'skip.organization',
        'an organization, not a person (is_organization true)',
      ]),
    );
  });
});
