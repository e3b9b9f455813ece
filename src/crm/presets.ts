/**
 * Named mappings: presets are YAML files `config/mappings/<name>.yaml`. The
 * folder given by the caller (CRM_SYNC_MAPPINGS_DIR) is searched first, then
 * the presets shipped with crm-sync, so a user can add or override a preset
 * without touching the package.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseDocument } from 'yaml';
import type { CompiledMapping } from './mapped.js';
import { MappingError, compileMapping, type MappingDefinitionInput } from './mapping.js';

/** Presets shipped with crm-sync: `config/mappings/` beside `src/` or `dist/`. */
export const builtinMappingsDir = resolve(
  dirname(fileURLToPath(import.meta.url)),
  '..',
  '..',
  'config',
  'mappings',
);

const PRESET_NAME = /^[a-z0-9][a-z0-9_-]*$/;

/** Reads and parses a YAML file; syntax errors come back as problems with their line. */
export function readYamlFile(file: string): { value: unknown; problems: string[] } {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    return { value: undefined, problems: [`cannot read: ${(err as Error).message}`] };
  }
  const doc = parseDocument(text);
  if (doc.errors.length > 0) {
    return {
      value: undefined,
      problems: doc.errors.map((e) => {
        const at = e.linePos?.[0];
        const message = (e.message.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/, '');
        return at ? `line ${at.line}, column ${at.col}: ${message}` : message;
      }),
    };
  }
  return { value: doc.toJS() as unknown, problems: [] };
}

export interface LoadMappingOptions {
  /** Folder searched first for `<name>.yaml`; the built-in presets are searched after it. */
  mappingsDir?: string;
}

function searchDirs(options: LoadMappingOptions): string[] {
  return [...new Set([options.mappingsDir, builtinMappingsDir].filter((d): d is string => !!d))];
}

/** Where a preset may be, in the order searched: the first that exists is the preset. */
export function presetFiles(name: string, options: LoadMappingOptions = {}): string[] {
  if (!PRESET_NAME.test(name)) return [];
  return searchDirs(options).flatMap((dir) =>
    ['.yaml', '.yml'].map((ext) => join(dir, name + ext)),
  );
}

/** The file of a preset, or undefined when no folder has it. */
export function findPreset(name: string, options: LoadMappingOptions = {}): string | undefined {
  return presetFiles(name, options).find((file) => existsSync(file));
}

/** Names of every preset available, sorted. */
export function listPresets(options: LoadMappingOptions = {}): string[] {
  const names = new Set<string>();
  for (const dir of searchDirs(options)) {
    if (!existsSync(dir)) continue;
    for (const f of readdirSync(dir)) {
      const m = /^(.+)\.ya?ml$/.exec(f);
      if (m && PRESET_NAME.test(m[1]!)) names.add(m[1]!);
    }
  }
  return [...names].sort();
}

/**
 * A preset name or an inline definition, compiled. Throws MappingError
 * (`mapping.not-found` or `mapping.invalid`) with every problem; problems of
 * a preset file are prefixed with its path.
 */
export function loadMapping(
  ref: string | MappingDefinitionInput,
  options: LoadMappingOptions = {},
): CompiledMapping {
  if (typeof ref !== 'string') return compileMapping(ref);
  const file = findPreset(ref, options);
  if (!file) {
    const known = listPresets(options);
    throw new MappingError('mapping.not-found', [
      `no mapping preset "${ref}" in ${searchDirs(options).join(' or ')} (have: ${known.join(', ') || 'none'})`,
    ]);
  }
  const { value, problems } = readYamlFile(file);
  if (problems.length > 0) {
    throw new MappingError(
      'mapping.invalid',
      problems.map((p) => `${file}: ${p}`),
    );
  }
  try {
    return compileMapping(value);
  } catch (err) {
    if (err instanceof MappingError) {
      throw new MappingError(
        err.code,
        err.problems.map((p) => `${file}: ${p}`),
        { cause: err },
      );
    }
    throw err;
  }
}
