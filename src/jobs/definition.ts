/**
 * Sync job definitions: one YAML file per job in a jobs folder, the job's
 * name being the file name without its extension. Each file is validated
 * with zod and its mapping compiled, and every problem is reported with the
 * file and its path, so `crm-sync validate` can list them all at once.
 * The format is documented in docs/MAPPING.md ("Job definitions").
 */
import { existsSync, readdirSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import cron from 'node-cron';
import { z } from 'zod';
import { JobAlertsSchema } from '../alerts/rules.js';
import {
  DuplicatesFields,
  compileDuplicates,
  duplicatesPathUses,
  duplicatesProblem,
  jobDuplicates,
} from '../crm/duplicates.js';
import type { CompiledMapping, Entity } from '../crm/mapped.js';
import { MappingError, compileMapping, formatIssues } from '../crm/mapping.js';
import { loadMapping, presetFiles, readYamlFile } from '../crm/presets.js';
import { JobSourceSchema } from '../crm/source-spec.js';
import { MAX_WEIGHT } from '../queue/fair-share.js';
import { isTimeZone } from '../time-zone.js';

export class JobError extends Error {
  constructor(
    readonly code: 'job.invalid' | 'job.not-found',
    /** Every problem, each prefixed with the file and its path. */
    readonly problems: string[],
  ) {
    super(problems.join('\n'));
    this.name = 'JobError';
  }
}

const Share = z.number().min(0).max(1);

export const JobSchema = z
  .strictObject({
    description: z.string().optional(),
    entity: z.enum(['companies', 'members']),
    source: JobSourceSchema,
    mapping: z.union(
      [
        z
          .string()
          .regex(/^[a-z0-9][a-z0-9_-]*$/, 'a preset name uses lower-case letters, digits, - and _'),
        z.record(z.string(), z.unknown()),
      ],
      {
        error: 'a preset name (lower-case letters, digits, - and _) or an inline mapping',
      },
    ),
    schedule: z
      .string()
      .refine((s) => cron.validate(s), 'not a valid cron expression')
      .optional(),
    timezone: z
      .string()
      .refine(isTimeZone, 'not an IANA time zone (e.g. Europe/Berlin)')
      .optional(),
    mode: z.enum(['upsert', 'create-only', 'update-only']).default('upsert'),
    createVia: z.enum(['companies', 'customers']).default('companies'),
    membersUpdate: z.enum(['report', 'put']).default('report'),
    fullSnapshot: z.boolean().default(true),
    thresholds: z
      .strictObject({
        maxInvalidShare: Share.default(0.1),
        maxChangeShare: Share.default(0.5),
        minRows: z.number().int().min(0).default(20),
      })
      .prefault({}),
    indexMaxAgeHours: z.number().positive().default(24),
    /**
     * The weight of this job's runs in the write queue's round robin
     * (src/queue/fair-share.ts): a run of priority 2 sends twice as many
     * writes as one of priority 1 while both have writes waiting.
     */
    priority: z
      .number()
      .int('a whole number')
      .min(1, 'at least 1')
      .max(MAX_WEIGHT, `at most ${MAX_WEIGHT}`)
      .default(1),
    /** Turns skip rules of the mapping off (`merged: false`) or keeps them (`true`), by name. */
    skip: z.record(z.string(), z.boolean()).optional(),
    /** Which row keeps a record several rows claim; replaces the mapping's `duplicates`. */
    duplicates: DuplicatesFields.optional(),
    /** Where this job's alerts go and on what (src/alerts/rules.ts); CRM_SYNC_ALERT_WEBHOOK otherwise. */
    alerts: JobAlertsSchema.optional(),
  })
  // Runs even when another field failed, so that every problem is reported at once.
  .superRefine(
    (j, ctx) => {
      if (j.timezone !== undefined && j.schedule === undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['timezone'],
          message: 'a timezone needs a schedule',
        });
      }
    },
    { when: () => true },
  );

type JobFile = z.output<typeof JobSchema>;

export type JobSource = JobFile['source'];

export interface JobDefinition<E extends Entity = Entity> extends Omit<
  JobFile,
  'mapping' | 'entity'
> {
  /** File name without extension. */
  name: string;
  /** Absolute path of the YAML file. */
  file: string;
  entity: E;
  /** The preset name, or "inline" for a mapping written in the job file. */
  mappingRef: string;
  mapping: CompiledMapping<E>;
}

export interface LoadJobOptions {
  /** Searched for mapping presets before the built-in ones (CRM_SYNC_MAPPINGS_DIR). */
  mappingsDir?: string;
  /**
   * Told the files a load looks for, just before it reads them: the job's
   * `.yaml` and `.yml`, then, for a preset mapping, every file the preset
   * search tries (src/jobs/job-loader.ts stamps them).
   */
  reading?: (files: readonly string[]) => void;
}

/** A job's name: its file name, lower-case letters, digits, - and _. */
export const JOB_NAME = /^[a-z0-9][a-z0-9_-]*$/;

/** Parses one job file; returns the job or its problems, each prefixed with the file. */
function parseJob(
  file: string,
  name: string,
  options: LoadJobOptions,
): { job?: JobDefinition; problems: string[] } {
  const at = (p: string) => `${file}: ${p}`;
  if (!JOB_NAME.test(name)) {
    return { problems: [at('job names (file names) use lower-case letters, digits, - and _')] };
  }
  const { value, problems: yamlProblems } = readYamlFile(file);
  if (yamlProblems.length > 0) return { problems: yamlProblems.map(at) };
  const parsed = JobSchema.safeParse(value ?? {});
  if (!parsed.success) return { problems: formatIssues(parsed.error).map(at) };
  const def = parsed.data;
  let mapping: CompiledMapping;
  try {
    if (typeof def.mapping === 'string') {
      options.reading?.(presetFiles(def.mapping, options));
      mapping = loadMapping(def.mapping, options);
    } else {
      mapping = compileMapping(def.mapping, { origin: 'mapping' });
    }
  } catch (err) {
    if (err instanceof MappingError) {
      // Preset problems already name their own file.
      return {
        problems: err.problems.map((p) =>
          typeof def.mapping === 'string' ? at(`mapping: ${p}`) : at(p),
        ),
      };
    }
    throw err;
  }
  if (def.skip !== undefined) {
    try {
      mapping = mapping.withSkipRules(def.skip);
    } catch (err) {
      if (err instanceof MappingError) return { problems: err.problems.map(at) };
      throw err;
    }
  }
  // The job's rule over the mapping's (the compiled mapping is what the planner reads).
  if (def.duplicates !== undefined) {
    const merged = jobDuplicates(def.duplicates, mapping.duplicates);
    const problem = duplicatesProblem(merged);
    if (problem !== undefined) return { problems: [at(`duplicates.by: ${problem}`)] };
    const duplicates = compileDuplicates(merged);
    const paths = [
      ...mapping.paths.filter((u) => u.field !== 'duplicates.by'),
      ...duplicatesPathUses(duplicates),
    ];
    mapping = { ...mapping, duplicates, paths };
  }
  if (mapping.entity !== def.entity) {
    return {
      problems: [
        at(
          `mapping: ${mapping.name} maps ${mapping.entity}, but the job's entity is ${def.entity}`,
        ),
      ],
    };
  }
  const source =
    def.source.path !== undefined && !isAbsolute(def.source.path)
      ? { ...def.source, path: resolve(file, '..', def.source.path) }
      : def.source;
  const job: JobDefinition = {
    ...def,
    name,
    file,
    source,
    mappingRef: typeof def.mapping === 'string' ? def.mapping : 'inline',
    mapping,
  };
  return { job, problems: [] };
}

/** The names of the jobs of a folder, sorted (none when the folder does not exist). */
export function jobNames(dir: string): string[] {
  const root = resolve(dir);
  return existsSync(root) ? [...jobFilesByName(root).keys()] : [];
}

function jobFilesByName(dir: string): Map<string, string[]> {
  const byName = new Map<string, string[]>();
  for (const f of readdirSync(dir).sort()) {
    const m = /^(.+)\.ya?ml$/.exec(f);
    if (!m) continue;
    const list = byName.get(m[1]!) ?? [];
    list.push(join(dir, f));
    byName.set(m[1]!, list);
  }
  return byName;
}

/** One job by name (`<dir>/<name>.yaml` or `.yml`); throws JobError with every problem. */
export function loadJob(dir: string, name: string, options: LoadJobOptions = {}): JobDefinition {
  const root = resolve(dir);
  let files: string[];
  if (JOB_NAME.test(name)) {
    const candidates = ['.yaml', '.yml'].map((e) => join(root, name + e));
    options.reading?.(candidates);
    files = candidates.filter((f) => existsSync(f));
  } else {
    // Not a job name: only a file the folder holds by that name is read (its
    // problem is its name), never a path made of the name.
    files = (existsSync(root) && jobFilesByName(root).get(name)) || [];
  }
  if (files.length === 0) {
    const known = jobNames(root).join(', ');
    throw new JobError('job.not-found', [
      `no job "${name}" in ${root}${known ? ` (have: ${known})` : ''}`,
    ]);
  }
  if (files.length > 1) {
    throw new JobError('job.invalid', [`job "${name}" is defined twice: ${files.join(' and ')}`]);
  }
  const { job, problems } = parseJob(files[0]!, name, options);
  if (!job) throw new JobError('job.invalid', problems);
  return job;
}

/** A job of a folder that did not load, and why. */
export interface JobProblem {
  job: string;
  problems: string[];
}

/**
 * Every job of a folder, and every problem of every file (`crm-sync
 * validate`, the jobs list), each job read now with `how`'s options, or
 * loaded by `how` itself: a process's loader that keeps what it read
 * (src/jobs/job-loader.ts). `failed` names the job of each file's problems.
 */
export function loadJobs(
  dir: string,
  how: LoadJobOptions | ((name: string) => JobDefinition) = {},
): { jobs: JobDefinition[]; problems: string[]; failed: JobProblem[] } {
  const load = typeof how === 'function' ? how : (name: string) => loadJob(dir, name, how);
  const root = resolve(dir);
  if (!existsSync(root))
    return { jobs: [], problems: [`jobs folder ${root} does not exist`], failed: [] };
  const jobs: JobDefinition[] = [];
  const failed: JobProblem[] = [];
  for (const job of jobNames(root)) {
    try {
      jobs.push(load(job));
    } catch (err) {
      if (!(err instanceof JobError)) throw err;
      failed.push({ job, problems: err.problems });
    }
  }
  return { jobs, problems: failed.flatMap((f) => f.problems), failed };
}
