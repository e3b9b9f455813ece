/**
 * The worker's start-up reads every job of its jobs folder: a job that does
 * not load is named, with its problems, in a warning then, and the others
 * are kept for their runs (test/unit/job-loader.test.ts, preloadJobs).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useEngines, hubspotJob } from '../harness/engine.js';
import { captureLogger } from '../harness/log-capture.js';

const engine = useEngines();

describe('worker start-up', () => {
  it('warns of each job of the folder that does not load, and of no other', async () => {
    const { logger, lines } = captureLogger('info');
    const h = await engine({ deferWorkers: true, logger });
    h.writeJob('nightly', hubspotJob(join(h.dir, 'export.csv')));
    writeFileSync(join(h.jobsDir, 'broken.yaml'), 'entity: companies\nsource: [\n');
    await h.startWorkers();
    const warned = lines.filter((l) => l.level === 'warn' && String(l.msg).startsWith('job '));
    expect(warned.map((l) => [l.msg, l.job])).toEqual([
      ['job does not load: its runs will fail until it is fixed', 'broken'],
    ]);
    expect((warned[0]!.problems as string[]).join('\n')).toContain(join(h.jobsDir, 'broken.yaml'));
  });
});
