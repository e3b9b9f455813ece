/**
 * The little the sandbox logs goes to a logger its caller passes (the CLI
 * passes crm-sync's, which censors secrets); pino's Logger fits this shape.
 * Without one, nothing is printed.
 */
export interface Logger {
  debug(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

export const silentLogger: Logger = { debug() {}, error() {} };
