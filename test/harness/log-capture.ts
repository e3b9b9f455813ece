/** A logger whose JSON lines a test reads, as the product writes them (redaction included). */
import { Writable } from 'node:stream';
import { createLogger, type Logger } from '../../src/log.js';

export function captureLogger(level = 'debug'): {
  logger: Logger;
  lines: Record<string, unknown>[];
} {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString().split('\n'))
        if (l) lines.push(JSON.parse(l) as Record<string, unknown>);
      cb();
    },
  });
  return { logger: createLogger({ level, destination, pretty: false }), lines };
}
