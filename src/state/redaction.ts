/**
 * What a run record may hold: no credentials. A source URL loses its user
 * name, password and secret-looking query values; an error message loses
 * anything shaped like an auth header or URL credentials, and every secret
 * the process registered (the API key): `scrubText` (src/log.ts). Done here,
 * at the store's door, so a caller's slip cannot put a secret into Redis.
 */
import { isSecretParam, redactSecrets, scrubText, withoutUrlCredentials } from '../log.js';

const REDACTED = 'REDACTED';

/** A source for the run record: a path as is (a URL within it without credentials), a URL without credentials. */
export function stripCredentials(source: string): string {
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(source)) return withoutUrlCredentials(redactSecrets(source));
  let url: URL;
  try {
    url = new URL(source);
  } catch {
    // Not parseable as a URL: drop anything between :// and @ by hand.
    return scrubText(source);
  }
  url.username = '';
  url.password = '';
  for (const name of [...url.searchParams.keys()]) {
    if (isSecretParam(name)) url.searchParams.set(name, REDACTED);
  }
  return redactSecrets(url.toString());
}
