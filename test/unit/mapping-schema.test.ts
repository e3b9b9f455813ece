/**
 * Mapped bodies skip the zod parse per row (see CompileOptions.verifyWithSchema):
 * this checks, for every preset in config/mappings/, on rows built from the
 * preset's own columns and paths (test/harness/preset-rows.ts: most
 * valid-looking, some broken on purpose, a few matching a skip rule), that
 * every accepted body is one the platform request schema accepts, and that
 * verifying changes no result. Most rows must map, or the property would
 * hardly be tried.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileMapping } from '../../src/crm/mapping.js';
import {
  builtinMappingsDir,
  findPreset,
  listPresets,
  readYamlFile,
} from '../../src/crm/presets.js';
import { CompanyRequest, MemberRequest } from '../../src/platform/schemas.js';
import { presetRows, type RawPreset, type RowShape } from '../harness/preset-rows.js';

const RUNS = 1500;
const PRESETS = listPresets({ mappingsDir: builtinMappingsDir });

it('covers every preset in config/mappings/', () => {
  // Fifteen when this was written; a new preset is covered as it is added.
  expect(PRESETS.length).toBeGreaterThanOrEqual(15);
});

describe.each(PRESETS)('preset %s', (preset) => {
  const def = readYamlFile(findPreset(preset)!).value;
  const fast = compileMapping(def);
  const verified = compileMapping(def, { verifyWithSchema: true });
  const schema = fast.entity === 'companies' ? CompanyRequest : MemberRequest;

  it('accepts only bodies the platform schema accepts, verifying changes nothing, and most rows map', () => {
    const drawn: Record<RowShape, number> = { valid: 0, broken: 0, 'skip-rule': 0 };
    const accepted: Record<RowShape, number> = { valid: 0, broken: 0, 'skip-rule': 0 };
    fc.assert(
      fc.property(presetRows(def as RawPreset), ({ record, shape }) => {
        const row = { line: 2, record };
        const r = fast.map(row);
        drawn[shape]++;
        if (r.ok) {
          accepted[shape]++;
          expect(schema.safeParse(r.body).success).toBe(true);
        }
        expect(verified.map(row)).toEqual(r);
      }),
      { numRuns: RUNS },
    );
    const total = Object.values(accepted).reduce((a, b) => a + b, 0);
    expect(total, JSON.stringify({ drawn, accepted })).toBeGreaterThan(RUNS / 2);
    // A row that only looks valid always maps: the generator reads the preset right.
    expect(accepted.valid, JSON.stringify({ drawn, accepted })).toBe(drawn.valid);
    // A row matching a skip rule never maps.
    expect(accepted['skip-rule']).toBe(0);
  });
});
