import { describe, expect, it } from 'vitest';
import { resolveWebhook } from '../../src/alerts/delivery.js';
import { ConfigError, loadConfig } from '../../src/config.js';
import { redactSecrets } from '../../src/log.js';

describe('alert settings', () => {
  it('are read from the environment, the webhook registered as a secret', () => {
    const hook = 'https://hooks.example.com/services/T1/B2/alertKeyFromEnv';
    const c = loadConfig({
      CRM_SYNC_ALERT_WEBHOOK: hook,
      CRM_SYNC_ALERT_FORMAT: 'slack',
      CRM_SYNC_PUBLIC_URL: 'https://ops.example.com',
      CRM_SYNC_ALERT_ATTEMPTS: '3',
    });
    expect(c.alerts).toEqual({
      webhook: hook,
      format: 'slack',
      publicUrl: 'https://ops.example.com',
      attempts: 3,
      backoffMs: 5_000,
      timeoutMs: 10_000,
    });
    expect(redactSecrets(`posting to ${hook}`)).toBe('posting to [REDACTED]');
  });

  it('read the signing secret, registered as a secret; empty is not set', () => {
    const secret = 'alertSigningSecretFromEnv0123';
    expect(loadConfig({ CRM_SYNC_ALERT_SECRET: secret }).alerts.secret).toBe(secret);
    expect(redactSecrets(`signed with ${secret}`)).toBe('signed with [REDACTED]');
    expect(loadConfig({ CRM_SYNC_ALERT_SECRET: '' }).alerts).not.toHaveProperty('secret');
  });

  it('leave an empty webhook unset and refuse what is not an http(s) URL or format', () => {
    expect(loadConfig({ CRM_SYNC_ALERT_WEBHOOK: '' }).alerts.webhook).toBeUndefined();
    expect(loadConfig({}).alerts).toEqual({
      format: 'json',
      attempts: 10,
      backoffMs: 5_000,
      timeoutMs: 10_000,
    });
    let err: unknown;
    try {
      loadConfig({
        CRM_SYNC_ALERT_WEBHOOK: 'ftp://hooks.example.com/k3y',
        CRM_SYNC_ALERT_FORMAT: 'xml',
        CRM_SYNC_PUBLIC_URL: 'not a url',
      });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const problems = (err as ConfigError).problems.join('\n');
    expect(problems).toMatch(/CRM_SYNC_ALERT_WEBHOOK/);
    expect(problems).toMatch(/CRM_SYNC_ALERT_FORMAT/);
    expect(problems).toMatch(/CRM_SYNC_PUBLIC_URL/);
    // The value is never echoed.
    expect(problems).not.toContain('k3y');
  });

  it("reads a job's ${NAME} webhook from the environment when delivering, as a secret", () => {
    const url = 'https://hooks.example.com/services/T1/B2/jobKeyFromEnv';
    expect(resolveWebhook('${JOB_HOOK}', { JOB_HOOK: url })).toBe(url);
    expect(redactSecrets(url)).toBe('[REDACTED]');
    expect(() => resolveWebhook('${JOB_HOOK}', {})).toThrow(
      'the alerts webhook names the environment variable JOB_HOOK, which is not set',
    );
    expect(resolveWebhook('https://alerts.example/hook', {})).toBe('https://alerts.example/hook');
  });
});
