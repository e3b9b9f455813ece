/**
 * The one logger. JSON lines (pino) for machines; pretty when stderr is a TTY.
 * Secrets are removed at the source: the API key is never put in a log call,
 * and as a second line of defence every known secret path is redacted and any
 * string equal to a registered secret is censored by `redactSecrets`.
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

export const REDACT_PATHS = [
  'apiKey',
  '*.apiKey',
  'authorization',
  '*.authorization',
  'headers.authorization',
  '*.headers.authorization',
  'token',
  '*.token',
  'password',
  '*.password',
];

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
    formatters: { level: (label) => ({ level: label }) },
    hooks: {
      // Last line of defence: a secret that slipped into a message is censored.
      logMethod(args, method) {
        if (secretValues.size > 0) {
          for (let i = 0; i < args.length; i++) {
            const a = args[i];
            if (typeof a === 'string') args[i] = redactSecrets(a);
          }
        }
        method.apply(this, args);
      },
    },
    serializers: {
      err: (err: unknown) => {
        const s = pino.stdSerializers.err(err as Error);
        if (s.message) s.message = redactSecrets(s.message);
        if (s.stack) s.stack = redactSecrets(s.stack);
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
