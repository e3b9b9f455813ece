/**
 * The one logger. JSON lines (pino) for machines; pretty when stderr is a TTY.
 * Secrets are removed at the source: the API key is never put in a log call.
 * As a second line of defence, on every transport: a value under a secret
 * key (`token`, `authorization`, … up to four levels deep) is censored by
 * pino's `redact`, and every string logged (the message, values in objects,
 * an error's message and stack) loses registered secrets, URL credentials
 * and auth-header shapes (`scrubText`).
 */
import { pino, type Logger, type LoggerOptions } from 'pino';

export type { Logger };

const secretValues = new Set<string>();

/** Registers a value (an API key, a URL password) that must never be printed. */
export function registerSecret(value: string | undefined): void {
  if (value && value.length >= 4) secretValues.add(value);
}

/** Replaces every registered secret in a string with `[REDACTED]`. */
export function redactSecrets(text: string): string {
  let out = text;
  for (const s of secretValues) if (out.includes(s)) out = out.split(s).join('[REDACTED]');
  return out;
}

const REDACTED = 'REDACTED';

// Names that say a query parameter's value is a credential: `token`, `api_key`, HubSpot's
// `hapikey`, `X-Amz-Signature`, `password`, `pwd`, `auth`, `session`, an OAuth `code`.
const SECRET_PARAM = /token|key|secret|sig|passw|pwd|auth|session|credential|^code$/i;

/** Whether a URL query parameter's name says its value is a credential. */
export function isSecretParam(name: string): boolean {
  return SECRET_PARAM.test(name);
}

/** Text with every `scheme://user:pass@` written `scheme://`. */
export function withoutUrlCredentials(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^\s/@]*@/gi, '$1');
}

/**
 * A message without credentials: every registered secret, the user name and
 * password of a URL (`https://user:pass@host` → `https://host`), and values
 * shaped like auth headers (`Authorization: …`, `Bearer …`, `x-api-key=…`).
 */
export function scrubText(text: string): string {
  return withoutUrlCredentials(redactSecrets(text))
    .replace(
      /\b(authorization|proxy-authorization|x-api-key|api-key|apikey|cookie|set-cookie)(["']?\s*[:=]\s*["']?)(?:(?:bearer|basic|token|apikey)\s+)?[^\s"',;}]+/gi,
      `$1$2${REDACTED}`,
    )
    .replace(/\b(bearer|basic|token)\s+[A-Za-z0-9._~+/=-]{8,}/gi, `$1 ${REDACTED}`);
}

/** Keys whose value is a secret wherever they are, in the spellings libraries use. */
const SECRET_KEYS = [
  'apiKey',
  'api_key',
  'authorization',
  'Authorization',
  'proxy-authorization',
  'x-api-key',
  'cookie',
  'token',
  'accessToken',
  'access_token',
  'refreshToken',
  'password',
  'secret',
];

/** pino's wildcards match one level each: a secret key at the top and up to three levels down. */
export const REDACT_PATHS = SECRET_KEYS.flatMap((key) => {
  const leaf = /^[A-Za-z_$][\w$]*$/.test(key) ? key : `["${key}"]`;
  return ['', '*.', '*.*.', '*.*.*.'].map((depth) =>
    leaf.startsWith('[') ? `${depth.replace(/\.$/, '')}${leaf}` : `${depth}${leaf}`,
  );
});

/**
 * Strings in a logged object, scrubbed; the object is copied only where a
 * string changed. Plain objects and arrays are walked (a cycle or anything
 * deeper than eight levels is left to pino); errors go through the `err`
 * serializer.
 */
function scrubStrings(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return scrubText(value);
  if (depth > 8 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) {
    let out: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const v = scrubStrings(value[i], depth + 1);
      if (v !== value[i]) (out ??= value.slice())[i] = v;
    }
    return out ?? value;
  }
  const proto = Object.getPrototypeOf(value) as unknown;
  if (proto !== Object.prototype && proto !== null) return value;
  let out: Record<string, unknown> | undefined;
  for (const [k, v] of Object.entries(value)) {
    const s = scrubStrings(v, depth + 1);
    if (s !== v) (out ??= { ...(value as Record<string, unknown>) })[k] = s;
  }
  return out ?? value;
}

export interface LogOptions {
  /** The config's `logLevel` (LOG_LEVEL); info when not given. */
  level?: string;
  pretty?: boolean;
  /** Where lines go; defaults to stderr so that `--json` output on stdout stays clean. */
  destination?: NodeJS.WritableStream;
}

export function createLogger(opts: LogOptions = {}): Logger {
  const options: LoggerOptions = {
    level: opts.level ?? 'info',
    base: { svc: 'crm-sync' },
    redact: { paths: REDACT_PATHS, censor: '[REDACTED]' },
    formatters: {
      level: (label) => ({ level: label }),
      // Last line of defence: a secret that slipped into a logged value is censored.
      log: (obj) => scrubStrings(obj) as Record<string, unknown>,
    },
    hooks: {
      // The same for the message and its format arguments.
      logMethod(args, method) {
        for (let i = 0; i < args.length; i++) {
          const a = args[i];
          if (typeof a === 'string') args[i] = scrubText(a);
        }
        method.apply(this, args);
      },
    },
    serializers: {
      err: (err: unknown) => {
        const s = pino.stdSerializers.err(err as Error) as unknown as Record<string, unknown>;
        for (const key of Object.keys(s)) s[key] = scrubStrings(s[key]);
        return s;
      },
    },
  };
  const pretty = opts.pretty ?? (process.stderr.isTTY === true && !opts.destination);
  if (pretty) {
    return pino({
      ...options,
      transport: { target: 'pino-pretty', options: { destination: 2, colorize: true } },
    });
  }
  return pino(options, (opts.destination ?? process.stderr) as pino.DestinationStream);
}

/** A logger that prints nothing, for library callers that pass none. */
export const silentLogger: Logger = pino({ level: 'silent' });
