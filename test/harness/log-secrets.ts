/**
 * Log calls carrying secrets the way a slip in the code would: under secret
 * keys at several depths, in URLs with credentials, in an error and its
 * attached request options, and a registered secret inside a message and an
 * object. Used in-process by test/unit/log.test.ts, and run as a script
 * (`node --import tsx test/harness/log-secrets.ts json|pretty`) to log
 * through the transports of a real process: JSON lines to stderr, or
 * pino-pretty.
 */
import { pathToFileURL } from 'node:url';
import { createLogger, registerSecret, type Logger } from '../../src/log.js';

/** Registered with registerSecret, as the config registers the API key. */
export const REGISTERED = 'reg-secret-9Vv4';

/** Every value that must not reach the output (the user names of URLs included). */
export const SECRETS = [
  'hdr-auth-91Zq',
  'tok-secret-44Kd',
  'apikey-secret-7Hq2',
  'pw-secret-0Lm3',
  'basic-secret-6Nn1',
  'xkey-secret-5Tt8',
  'nested-token-3Jj5',
  'exporter-user',
  'url-pass-8Ww1',
  'msg-pass-3Rr7',
  'err-pass-6Yy2',
  'err-hdr-secret-2Pp9',
  'bearer-secret-4Gg6',
  REGISTERED,
];

/** What must still be there: the messages and the non-secret parts of values. */
export const KEPT = [
  'loading the export',
  'exports.example.com/accounts.csv',
  'downloading https://exports.example.com/a.csv',
  'GET https://h.example/x failed',
  'the key [REDACTED] was refused',
  'job companies',
];

export function logSecrets(logger: Logger): void {
  registerSecret(REGISTERED);
  logger.info(
    {
      job: 'companies',
      authorization: 'hdr-auth-91Zq',
      token: 'tok-secret-44Kd',
      platform: { apiKey: 'apikey-secret-7Hq2' },
      redis: { options: { password: 'pw-secret-0Lm3' } },
      request: {
        headers: { Authorization: 'basic-secret-6Nn1', 'x-api-key': 'xkey-secret-5Tt8' },
      },
      page: { next: { auth: { token: 'nested-token-3Jj5' } } },
      source: 'https://exporter-user:url-pass-8Ww1@exports.example.com/accounts.csv',
    },
    'loading the export',
  );
  logger.warn('downloading https://bob:msg-pass-3Rr7@exports.example.com/a.csv');
  logger.error(
    {
      err: Object.assign(new Error('GET https://u:err-pass-6Yy2@h.example/x failed'), {
        options: { headers: { authorization: 'err-hdr-secret-2Pp9' } },
      }),
    },
    'request failed with Bearer bearer-secret-4Gg6',
  );
  logger.info({ note: `the key ${REGISTERED} was refused` }, 'job %s: %s', 'companies', REGISTERED);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const mode = process.argv[2];
  if (mode !== 'json' && mode !== 'pretty') throw new Error('usage: log-secrets.ts json|pretty');
  logSecrets(createLogger({ pretty: mode === 'pretty' }));
}
