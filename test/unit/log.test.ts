import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { KEPT, SECRETS, logSecrets } from '../harness/log-secrets.js';

const SCRIPT = resolve(import.meta.dirname, '../harness/log-secrets.ts');

function expectNoSecret(output: string): void {
  for (const secret of SECRETS) expect(output, secret).not.toContain(secret);
  for (const kept of KEPT) expect(output, kept).toContain(kept);
}

/** The script's stderr: the logger of a real process, on the transport `mode` picks. */
function runScript(mode: 'json' | 'pretty'): string {
  const r = spawnSync(process.execPath, ['--import', 'tsx', SCRIPT, mode], {
    encoding: 'utf8',
    timeout: 25_000,
  });
  expect(r.status, r.stderr).toBe(0);
  return r.stderr;
}

describe('the logger keeps secrets out of its output', () => {
  it('JSON lines to a destination', () => {
    const chunks: string[] = [];
    const destination = new Writable({
      write(chunk: Buffer, _enc, cb) {
        chunks.push(chunk.toString());
        cb();
      },
    });
    logSecrets(createLogger({ destination, pretty: false }));
    const out = chunks.join('');
    expect(out.trim().split('\n')).toHaveLength(4);
    expectNoSecret(out);
    // Secret keys are kept, their values censored.
    const first = JSON.parse(out.split('\n')[0]!) as Record<string, unknown>;
    expect(first).toMatchObject({
      authorization: '[REDACTED]',
      token: '[REDACTED]',
      platform: { apiKey: '[REDACTED]' },
      redis: { options: { password: '[REDACTED]' } },
      request: { headers: { Authorization: '[REDACTED]', 'x-api-key': '[REDACTED]' } },
      page: { next: { auth: { token: '[REDACTED]' } } },
      source: 'https://exports.example.com/accounts.csv',
    });
  });

  // A process of its own starts tsx: seconds on a busy machine.
  it('JSON lines to stderr, in a process of its own', { timeout: 30_000 }, () => {
    const out = runScript('json');
    expect(out.trim().split('\n')).toHaveLength(4);
    expectNoSecret(out);
  });

  it('pino-pretty, in a process of its own', { timeout: 30_000 }, () => {
    const out = runScript('pretty');
    expect(out).toContain('[REDACTED]');
    expectNoSecret(out);
  });
});
