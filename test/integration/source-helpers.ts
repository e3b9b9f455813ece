/** Shared by the source tests: read a whole export under a time limit, or get its error. */
import { readRows, type ReadOptions } from '../../src/crm/read.js';
import type { SourceRow } from '../../src/crm/row.js';
import { SourceError } from '../../src/crm/source-error.js';
import type { SourceSpec } from '../../src/crm/source-spec.js';

export async function readAll(spec: SourceSpec, opts: ReadOptions = {}): Promise<SourceRow[]> {
  const rows: SourceRow[] = [];
  // A read that hangs fails the test instead of stalling the run.
  const signal = AbortSignal.timeout(10_000);
  for await (const batch of readRows(spec, { signal, ...opts })) rows.push(...batch);
  return rows;
}

export async function readError(spec: SourceSpec, opts: ReadOptions = {}): Promise<SourceError> {
  const err = await readAll(spec, opts).then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof SourceError)) throw new Error(`expected a SourceError, got ${String(err)}`);
  return err;
}
