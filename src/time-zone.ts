/**
 * Whether a name is an IANA time zone this runtime knows (Europe/Berlin,
 * UTC), as a job's `timezone` must be: the runtime's own table decides.
 */
export function isTimeZone(name: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}
