/**
 * Whether a host name or address is this machine's loopback: what may listen
 * without a token (OPS_HOST), since nothing off the machine can reach it.
 */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127(\.\d{1,3}){3}$/.test(host);
}
