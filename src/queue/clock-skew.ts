/**
 * Where Redis' clock stands against this process's monotonic clock
 * (`performance.now()`), as NTP estimates it: a script call that went out
 * at `sentAt` and came back at `receivedAt` read Redis' time somewhere in
 * between, so `redisNow − (sentAt + receivedAt) / 2` is the skew to within
 * half the round trip. The pacer maps its booked turns (Redis ms) to local
 * timers with it. Taken from each answer alone, a reply that waited 30 ms
 * in a busy event loop put that booking's turns 30 ms late against the
 * next one's, and a one-second window held 30 ms of turns more than the
 * rate gives; so the estimate of the shortest round trip is kept, and
 * replaced by a slower one only as it ages (clocks drift, Redis' wall clock
 * may be stepped).
 */
export interface Skew {
  /** Redis ms − local ms. */
  skew: number;
  /** Round trip of the call it came from (ms). */
  rtt: number;
  /** Local ms of that call. */
  at: number;
}

/** The uncertainty a kept estimate gains per second of age (ms). */
export const SKEW_AGEING_MS_PER_S = 1;

/** The better of the kept estimate and a new call's. */
export function nextSkew(
  kept: Skew | undefined,
  call: { sentAt: number; receivedAt: number; redisNow: number },
): Skew {
  const rtt = call.receivedAt - call.sentAt;
  const fresh = {
    skew: call.redisNow - (call.sentAt + call.receivedAt) / 2,
    rtt,
    at: call.receivedAt,
  };
  if (!kept) return fresh;
  const aged = kept.rtt + ((call.receivedAt - kept.at) / 1_000) * SKEW_AGEING_MS_PER_S;
  return rtt <= aged ? fresh : kept;
}
