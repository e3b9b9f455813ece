/**
 * OPTIONS answers, shaped like DRF's SimpleMetadata: name, description,
 * renders, parses and, for views that accept writes, the fields of each
 * write method with their type, requiredness, read-only flag and limits.
 */
import type { FieldSpec, FieldSpecs } from './fields.js';
import { INT32_MAX, INT32_MIN, maxLengthOf } from './fields.js';

export interface FieldMetadata {
  type: string;
  required: boolean;
  read_only: boolean;
  label: string;
  max_length?: number;
  min_value?: number;
  max_value?: number;
  child?: { type: string; required: boolean; read_only: boolean };
}

export interface ViewMetadata {
  name: string;
  description: string;
  renders: string[];
  parses: string[];
  actions?: Record<string, Record<string, FieldMetadata>>;
}

const KIND_TYPES: Record<FieldSpec['kind'], string> = {
  string: 'string',
  email: 'email',
  url: 'url',
  slug: 'slug',
  integer: 'integer',
  boolean: 'boolean',
  dict: 'nested object',
  'string-list': 'list',
  file: 'file upload',
};

function label(name: string): string {
  if (name === 'id') return 'ID';
  const words = name.replace(/_/g, ' ');
  return words.charAt(0).toUpperCase() + words.slice(1);
}

function describe(name: string, spec: FieldSpec): FieldMetadata {
  const m: FieldMetadata = {
    type: KIND_TYPES[spec.kind],
    required: spec.required === true,
    read_only: false,
    label: label(name),
  };
  if (['string', 'email', 'url', 'slug'].includes(spec.kind)) {
    const max = maxLengthOf(spec);
    if (max !== null) m.max_length = max;
  }
  if (spec.kind === 'integer') {
    m.min_value = spec.min ?? INT32_MIN;
    m.max_value = spec.max ?? INT32_MAX;
  }
  if (spec.kind === 'string-list') m.child = { type: 'string', required: true, read_only: false };
  return m;
}

export function fieldsMetadata(
  writable: FieldSpecs,
  readOnly: Readonly<Record<string, string>>,
): Record<string, FieldMetadata> {
  const out: Record<string, FieldMetadata> = {};
  for (const [name, type] of Object.entries(readOnly)) {
    out[name] = { type, required: false, read_only: true, label: label(name) };
  }
  for (const [name, spec] of Object.entries(writable)) out[name] = describe(name, spec);
  return out;
}

export function viewMetadata(
  name: string,
  actions?: Record<string, Record<string, FieldMetadata>>,
): ViewMetadata {
  return {
    name,
    description: '',
    renders: ['application/json', 'text/html'],
    parses: ['application/json', 'application/x-www-form-urlencoded', 'multipart/form-data'],
    ...(actions && Object.keys(actions).length > 0 && { actions }),
  };
}
