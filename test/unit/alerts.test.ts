import { describe, expect, it } from 'vitest';
import { alertPayload, genericPayload, runLink, slackPayload } from '../../src/alerts/payload.js';
import {
  ALERT_KINDS,
  JobAlertsSchema,
  alertId,
  alertPolicy,
  missedAlert,
  runAlert,
  topFields,
  type EndedRun,
} from '../../src/alerts/rules.js';
import { registerSecret } from '../../src/log.js';

const counts = {
  read: 100,
  created: 10,
  updated: 5,
  unchanged: 80,
  invalid: 2,
  conflict: 0,
  rejected: 3,
  failed: 0,
};
const run = (over: Partial<EndedRun>): EndedRun => ({
  id: 'run-20261123T020000Z-abc123',
  job: 'companies',
  status: 'completed',
  finishedAt: Date.UTC(2026, 10, 23, 2, 5),
  counts,
  ...over,
});
const all = { on: ALERT_KINDS, rejectedAbove: 0 };

describe('alert rules', () => {
  it('makes one alert per ended run: failed, stopped, or completed with rows over the count', () => {
    expect(runAlert(run({ status: 'failed', error: 'HTTP 401: the API key' }), all)).toMatchObject({
      kind: 'failed',
      reason: 'HTTP 401: the API key',
      runId: 'run-20261123T020000Z-abc123',
      at: '2026-11-23T02:05:00.000Z',
    });
    expect(runAlert(run({ status: 'stopped', error: 'too many invalid rows' }), all)?.kind).toBe(
      'stopped',
    );
    // 3 rejected + 0 failed: above 2, not above 3.
    expect(runAlert(run({}), { on: ALERT_KINDS, rejectedAbove: 2 })?.kind).toBe('rejected-above');
    expect(runAlert(run({}), { on: ALERT_KINDS, rejectedAbove: 3 })).toBeUndefined();
    expect(
      runAlert(run({ counts: { ...counts, rejected: 0, failed: 4 } }), {
        on: ALERT_KINDS,
        rejectedAbove: 3,
      })?.kind,
    ).toBe('rejected-above');
    // Invalid rows alone are the thresholds' business, not this alert's.
    expect(runAlert(run({ counts: { ...counts, rejected: 0 } }), all)).toBeUndefined();
    // A cancelled run was stopped on purpose: no alert, whatever it counted.
    expect(runAlert(run({ status: 'cancelled' }), all)).toBeUndefined();
  });

  it('makes none for a kind the job does not ask for, or a run still going', () => {
    expect(runAlert(run({ status: 'failed' }), { on: ['stopped'], rejectedAbove: 0 })).toBe(
      undefined,
    );
    expect(runAlert(run({ status: 'writing' }), all)).toBeUndefined();
    expect(missedAlert({ job: 'j', slot: 's', cause: 'overlap' }, { on: ['failed'] })).toBe(
      undefined,
    );
  });

  it('carries counts and field names only: no row value, whatever the run holds', () => {
    const a = runAlert(
      { ...run({}), secretField: 'x', counts: { ...counts, extra: 7 } } as EndedRun,
      all,
      ['domain'],
    )!;
    expect(Object.keys(a).sort()).toEqual(
      ['at', 'counts', 'fields', 'job', 'kind', 'runId', 'status'].sort(),
    );
    expect(Object.keys(a.counts!)).toEqual(Object.keys(counts));
  });

  it('names the fields of problem rows, most frequent first, never warnings or skips', () => {
    expect(
      topFields([
        { kind: 'rejected', field: 'website' },
        { kind: 'invalid', field: 'email' },
        { kind: 'invalid', field: 'email' },
        { kind: 'failed' },
        { kind: 'warning', field: 'phone' },
        { kind: 'skipped', field: 'skip.merged' },
        { kind: 'rejected', field: 'domain' },
      ]),
    ).toEqual(['email', 'domain', 'website']);
    expect(
      topFields(
        [
          { kind: 'invalid', field: 'a' },
          { kind: 'invalid', field: 'b' },
        ],
        1,
      ),
    ).toEqual(['a']);
  });

  it('describes each kind of missed slot', () => {
    const at = new Date('2026-11-23T03:00:00Z');
    expect(
      missedAlert(
        { job: 'j', slot: '2026-11-23T02:00:00.000Z', cause: 'overlap', runId: 'run-1' },
        all,
        at,
      ),
    ).toEqual({
      kind: 'missed',
      job: 'j',
      runId: 'run-1',
      reason: 'the slot started no run: the run run-1 of an earlier slot was still going',
      slot: '2026-11-23T02:00:00.000Z',
      missed: 1,
      at: '2026-11-23T03:00:00.000Z',
    });
    expect(
      missedAlert({ job: 'j', slot: 'B', cause: 'no-scheduler', count: 3, first: 'A' }, all, at)
        ?.reason,
    ).toBe('3 slot(s) from A to B passed while no scheduler was running');
    expect(
      missedAlert({ job: 'j', slot: 'B', cause: 'not-started', error: 'no job "j"' }, all, at)
        ?.reason,
    ).toBe(`the slot's run could not be started: no job "j"`);
  });

  it('gives one id per run and kind, or job and slot, without ":" (BullMQ refuses it)', () => {
    expect(alertId({ kind: 'failed', job: 'j', runId: 'run-1' })).toBe('alert-failed-run-1');
    expect(alertId({ kind: 'failed', job: 'k', runId: 'run-1' })).toBe('alert-failed-run-1');
    expect(
      alertId({ kind: 'missed', job: 'j', slot: '2026-11-23T02:00:00.000Z', runId: 'r' }),
    ).toBe('alert-missed-j-2026-11-23T020000.000Z');
  });

  it("joins a job's settings over the global ones", () => {
    expect(alertPolicy(undefined, { format: 'json' })).toBeUndefined();
    expect(alertPolicy(undefined, { webhook: 'https://h.example/x', format: 'slack' })).toEqual({
      webhook: 'https://h.example/x',
      format: 'slack',
      on: ALERT_KINDS,
      rejectedAbove: 0,
    });
    expect(
      alertPolicy(
        { webhook: '${HOOK}', format: 'json', on: ['failed'], rejectedAbove: 5 },
        { webhook: 'https://h.example/x', format: 'slack' },
      ),
    ).toEqual({ webhook: '${HOOK}', format: 'json', on: ['failed'], rejectedAbove: 5 });
    expect(alertPolicy({ on: [] }, { webhook: 'https://h.example/x', format: 'json' })?.on).toEqual(
      [],
    );
  });

  it('accepts a ${NAME} reference or a URL without credentials in a job file', () => {
    expect(JobAlertsSchema.safeParse({ webhook: '${SLACK_HOOK}' }).success).toBe(true);
    expect(JobAlertsSchema.safeParse({ webhook: 'https://alerts.example/hook' }).success).toBe(
      true,
    );
    const userinfo = JobAlertsSchema.safeParse({ webhook: 'https://u:p@alerts.example/hook' });
    expect(userinfo.success).toBe(false);
    expect(userinfo.error?.issues[0]?.message).toMatch(/user name or password/);
    expect(JobAlertsSchema.safeParse({ webhook: 'ftp://alerts.example/' }).success).toBe(false);
    expect(JobAlertsSchema.safeParse({ webhook: 'prefix-${X}' }).success).toBe(false);
    expect(JobAlertsSchema.safeParse({ on: ['exploded'] }).success).toBe(false);
    expect(JobAlertsSchema.safeParse({ rejectedAbove: -1 }).success).toBe(false);
    expect(JobAlertsSchema.safeParse({ url: 'x' }).success).toBe(false);
  });
});

describe('alert payloads', () => {
  const alert = runAlert(run({ status: 'failed', error: 'export <unreadable> & gone' }), all, [
    'domain',
  ])!;

  it('links to the run page when the public URL is set', () => {
    expect(runLink('https://ops.example/', 'run-1')).toBe('https://ops.example/#/runs/run-1');
    expect(runLink(undefined, 'run-1')).toBeUndefined();
    expect(runLink('https://ops.example', undefined)).toBeUndefined();
  });

  it('is a generic JSON object of the facts', () => {
    expect(genericPayload(alert, 'https://ops.example')).toEqual({
      type: 'crm-sync.alert',
      kind: 'failed',
      title: 'crm-sync: companies: run failed',
      job: 'companies',
      runId: 'run-20261123T020000Z-abc123',
      status: 'failed',
      reason: 'export <unreadable> & gone',
      counts,
      fields: ['domain'],
      at: '2026-11-23T02:05:00.000Z',
      url: 'https://ops.example/#/runs/run-20261123T020000Z-abc123',
    });
    expect(genericPayload(alert)).not.toHaveProperty('url');
  });

  it('carries no secret the error held, in either format', () => {
    const registered = 'alert-secret-8Xx3';
    registerSecret(registered);
    const error =
      `GET https://exporter:alert-url-pass-2Bb@files.example/a.csv failed; ` +
      `sent Authorization: Bearer alert-bearer-5Ss9; key ${registered}`;
    const secrets = [registered, 'alert-url-pass-2Bb', 'exporter:', 'alert-bearer-5Ss9'];
    const failed = runAlert(run({ status: 'failed', error }), all)!;
    const missed = missedAlert({ job: 'j', slot: 'B', cause: 'not-started', error }, all)!;
    for (const a of [failed, missed]) {
      for (const format of ['json', 'slack'] as const) {
        const body = JSON.stringify([a, alertPayload(a, format, 'https://ops.example')]);
        for (const secret of secrets) expect(body, `${a.kind} ${format}`).not.toContain(secret);
        expect(body).toContain('files.example/a.csv failed');
      }
    }
  });

  it('is a Slack message with text, blocks, the link as a button and escaped text', () => {
    const s = slackPayload(alert, 'https://ops.example');
    const url = 'https://ops.example/#/runs/run-20261123T020000Z-abc123';
    expect(s.text).toBe(`crm-sync: companies: run failed (${url})`);
    expect(s.blocks[0]).toEqual({
      type: 'header',
      text: { type: 'plain_text', text: 'crm-sync: companies: run failed' },
    });
    const section = (s.blocks[1] as { text: { text: string } }).text.text;
    expect(section).toContain(`*Run:* <${url}|run-20261123T020000Z-abc123>`);
    expect(section).toContain('*Reason:* export &lt;unreadable&gt; &amp; gone');
    expect(section).toContain('3 rejected');
    expect(section).toContain('*Fields:* `domain`');
    expect(s.blocks[2]).toEqual({
      type: 'actions',
      elements: [{ type: 'button', text: { type: 'plain_text', text: 'Open the run' }, url }],
    });
    expect(slackPayload(alert).blocks).toHaveLength(2);
    expect(alertPayload(alert, 'slack')).toEqual(slackPayload(alert));
    expect(alertPayload(alert, 'json')).toEqual(genericPayload(alert));
  });
});
