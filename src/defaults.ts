/**
 * Defaults that more than one module applies: the environment schema
 * (config.ts) and the module that uses the value when it is given none
 * (a library caller, a test). Written once so that they cannot drift apart.
 */

/**
 * Prefix of every Redis key (CRM_SYNC_PREFIX): a Redis Cluster hash tag, so
 * that all of a queue's keys share a slot.
 */
export const DEFAULT_PREFIX = '{crm-sync}';

/**
 * Requests per second to the platform, all workers together, for a module
 * given no settings (a library caller, a test). The service's default is
 * `PLATFORM_RATE_LIMIT=auto`: learned, below DEFAULT_RATE_LIMIT_MAX.
 */
export const DEFAULT_RATE_LIMIT = 10;

/** The most `PLATFORM_RATE_LIMIT=auto` goes to (PLATFORM_RATE_LIMIT_MAX); write concurrency is sized for it. */
export const DEFAULT_RATE_LIMIT_MAX = 200;

/** The platform latency write concurrency is sized for (PLATFORM_LATENCY_HINT_MS). */
export const DEFAULT_LATENCY_HINT_MS = 200;

/** A platform request without an answer for this long fails as a timeout (PLATFORM_TIMEOUT_MS). */
export const DEFAULT_PLATFORM_TIMEOUT_MS = 30_000;

/**
 * An idle keep-alive socket to the platform is closed after this long. A
 * server, proxy or NAT in between ends idle connections after its own
 * timeout (Node's http server 5 s, nginx 75 s, cloud NAT gateways a few
 * minutes), often without a word that reaches us; a request sent on such a
 * socket is answered by a reset, and for a create that is an unknown outcome
 * verified by listing the platform. Node's agent keeps idle sockets forever
 * unless given a timeout (it then also honours a shorter `Keep-Alive:
 * timeout=N` from the server, less a second). 4 s is under every such
 * timeout we know of, and what agentkeepalive chose for the same reason.
 */
export const DEFAULT_IDLE_SOCKET_MS = 4_000;

/** How long a shutdown waits for work in flight before it stops anyway (SHUTDOWN_TIMEOUT_MS). */
export const DEFAULT_SHUTDOWN_TIMEOUT_MS = 30_000;

/** A worker's job lock: a killed worker's jobs move on after this (WORKER_LOCK_MS). */
export const DEFAULT_WORKER_LOCK_MS = 30_000;

/** Runs kept per job definition in the history (CRM_SYNC_RUN_HISTORY). */
export const DEFAULT_RUN_HISTORY = 1_000;

/** How an alert's body is written: a JSON event, or a Slack message. */
export const ALERT_FORMATS = ['json', 'slack'] as const;
export type AlertFormat = (typeof ALERT_FORMATS)[number];

/** Where the ops server listens (OPS_HOST): loopback, so no token is needed. */
export const DEFAULT_OPS_HOST = '127.0.0.1';
