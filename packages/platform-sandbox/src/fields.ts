/**
 * DRF-like validation of request bodies. The platform evidently runs Django
 * REST Framework, so a bad body answers 400 with every problem at once, keyed
 * by field, in DRF's own words. Unknown fields are ignored (DRF drops them),
 * and so are response-only fields, which are simply absent from a spec.
 */

export type FieldKind =
  'string' | 'email' | 'url' | 'slug' | 'integer' | 'boolean' | 'dict' | 'string-list' | 'file';

export interface FieldSpec {
  kind: FieldKind;
  /** Required when creating (and on PUT, which DRF validates in full). */
  required?: boolean;
  /** null is accepted (the model column is nullable). */
  nullable?: boolean;
  /** For strings: "" is accepted. Defaults to !required. */
  blank?: boolean;
  /** For strings; `null` means unlimited (a TextField). */
  maxLength?: number | null;
  min?: number;
  max?: number;
}

export type FieldSpecs = Readonly<Record<string, FieldSpec>>;

/** Field-keyed messages; a list field nests its items' messages by index. */
export type FieldErrors = Record<string, string[] | Record<string, string[]>>;

export type ValidationResult =
  { ok: true; data: Record<string, unknown> } | { ok: false; errors: FieldErrors };

export const INT32_MIN = -2_147_483_648;
export const INT32_MAX = 2_147_483_647;
const DEFAULT_MAX_LENGTH = 255;
const MAX_NUMERIC_STRING = 1000;

const TRUE_VALUES = new Set<unknown>([
  't',
  'T',
  'y',
  'Y',
  'yes',
  'Yes',
  'YES',
  'true',
  'True',
  'TRUE',
  'on',
  'On',
  'ON',
  '1',
  1,
  true,
]);
const FALSE_VALUES = new Set<unknown>([
  'f',
  'F',
  'n',
  'N',
  'no',
  'No',
  'NO',
  'false',
  'False',
  'FALSE',
  'off',
  'Off',
  'OFF',
  '0',
  0,
  false,
]);

// Django's EmailValidator, reduced to its unquoted forms.
const EMAIL_USER = /^[-!#$%&'*+/=?^_`{}|~0-9a-z]+(\.[-!#$%&'*+/=?^_`{}|~0-9a-z]+)*$/i;
const EMAIL_DOMAIN = /^((?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+)(?:[a-z0-9-]{2,63})$/i;
const SLUG = /^[-a-zA-Z0-9_]+$/;
const DECIMAL_TAIL = /\.0*\s*$/;
const INTEGER_TEXT = /^\s*[-+]?\d+\s*$/;

/** The name Python gives a JSON value's type, for DRF's "got type" messages. */
export function pythonType(value: unknown): string {
  if (value === null) return 'NoneType';
  if (Array.isArray(value)) return 'list';
  switch (typeof value) {
    case 'string':
      return 'str';
    case 'boolean':
      return 'bool';
    case 'number':
      return Number.isInteger(value) ? 'int' : 'float';
    default:
      return 'dict';
  }
}

export function isEmail(value: string): boolean {
  const at = value.lastIndexOf('@');
  if (at <= 0 || at === value.length - 1 || value.length > 320) return false;
  const user = value.slice(0, at);
  const domain = value.slice(at + 1);
  if (!EMAIL_USER.test(user)) return false;
  return domain === 'localhost' || EMAIL_DOMAIN.test(domain) || /^\[[0-9a-f:.]+\]$/i.test(domain);
}

export function isUrl(value: string): boolean {
  if (/\s/.test(value)) return false;
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    return false;
  }
  if (!['http:', 'https:', 'ftp:', 'ftps:'].includes(u.protocol)) return false;
  const host = u.hostname;
  if (host === 'localhost' || /^\d{1,3}(\.\d{1,3}){3}$/.test(host) || host.startsWith('[')) {
    return true;
  }
  // Django requires a dotted name with a top-level domain of letters (or punycode).
  return /^([a-z0-9\u00a1-\uffff]([a-z0-9\u00a1-\uffff-]{0,61}[a-z0-9\u00a1-\uffff])?\.)+([a-z\u00a1-\uffff-]{2,63}|xn--[a-z0-9]{1,59})\.?$/i.test(
    host,
  );
}

type One =
  { ok: true; value: unknown } | { ok: false; errors: string[] | Record<string, string[]> };

function fail(message: string): One {
  return { ok: false, errors: [message] };
}

/** A text field's maximum length (DRF's defaults: EmailField 254, URLField 200, else 255), or null for none. */
export function maxLengthOf(spec: FieldSpec): number | null {
  if (spec.maxLength !== undefined) return spec.maxLength;
  return spec.kind === 'email' ? 254 : spec.kind === 'url' ? 200 : DEFAULT_MAX_LENGTH;
}

function toText(value: unknown, spec: FieldSpec, required: boolean): One {
  // DRF's CharField takes numbers too and stores their text.
  if (typeof value === 'boolean' || !['string', 'number'].includes(typeof value)) {
    return fail('Not a valid string.');
  }
  const text = String(value).trim();
  const blank = spec.blank ?? !required;
  if (text === '' && !blank) return fail('This field may not be blank.');
  const max = maxLengthOf(spec);
  const problems: string[] = [];
  if (max !== null && text.length > max) {
    problems.push(`Ensure this field has no more than ${max} characters.`);
  }
  if (text !== '') {
    if (spec.kind === 'email' && !isEmail(text)) problems.push('Enter a valid email address.');
    if (spec.kind === 'url' && !isUrl(text)) problems.push('Enter a valid URL.');
    if (spec.kind === 'slug' && !SLUG.test(text)) {
      problems.push('Enter a valid “slug” consisting of letters, numbers, underscores or hyphens.');
    }
  }
  return problems.length > 0 ? { ok: false, errors: problems } : { ok: true, value: text };
}

function toInteger(value: unknown, spec: FieldSpec): One {
  if (typeof value === 'string' && value.length > MAX_NUMERIC_STRING) {
    return fail('String value too large.');
  }
  let n: number;
  if (typeof value === 'number') {
    if (!Number.isInteger(value)) return fail('A valid integer is required.');
    n = value;
  } else if (typeof value === 'string') {
    // DRF strips a ".0" tail, then asks Python's int() to read the rest.
    const text = value.replace(DECIMAL_TAIL, '');
    if (!INTEGER_TEXT.test(text)) return fail('A valid integer is required.');
    n = Number(text.trim());
  } else {
    return fail('A valid integer is required.');
  }
  const max = spec.max ?? INT32_MAX;
  const min = spec.min ?? INT32_MIN;
  if (n > max) return fail(`Ensure this value is less than or equal to ${max}.`);
  if (n < min) return fail(`Ensure this value is greater than or equal to ${min}.`);
  return { ok: true, value: n };
}

function toValue(value: unknown, spec: FieldSpec, required: boolean): One {
  switch (spec.kind) {
    case 'string':
    case 'email':
    case 'url':
    case 'slug':
      return toText(value, spec, required);
    case 'integer':
      return toInteger(value, spec);
    case 'boolean':
      if (TRUE_VALUES.has(value)) return { ok: true, value: true };
      if (FALSE_VALUES.has(value)) return { ok: true, value: false };
      return fail('Must be a valid boolean.');
    case 'dict':
      if (typeof value !== 'object' || value === null || Array.isArray(value)) {
        return fail(`Expected a dictionary of items but got type "${pythonType(value)}".`);
      }
      return { ok: true, value };
    case 'string-list': {
      if (!Array.isArray(value)) {
        return fail(`Expected a list of items but got type "${pythonType(value)}".`);
      }
      const items: string[] = [];
      const nested: Record<string, string[]> = {};
      value.forEach((item: unknown, i) => {
        const r =
          item === null
            ? fail('This field may not be null.')
            : toText(item, { kind: 'string', blank: true }, false);
        if (r.ok) items.push(r.value as string);
        else nested[String(i)] = r.errors as string[];
      });
      return Object.keys(nested).length > 0
        ? { ok: false, errors: nested }
        : { ok: true, value: items };
    }
    case 'file':
      // A JSON body cannot carry an upload; DRF says so for anything but null.
      return fail('The submitted data was not a file. Check the encoding type on the form.');
  }
}

/**
 * Validates a parsed JSON body against a spec, as a DRF serializer would with
 * `partial=False` (POST and PUT alike): required fields must be present.
 */
export function validateBody(body: unknown, specs: FieldSpecs): ValidationResult {
  if (body === null) return { ok: false, errors: { non_field_errors: ['No data provided'] } };
  if (typeof body !== 'object' || Array.isArray(body)) {
    return {
      ok: false,
      errors: {
        non_field_errors: [`Invalid data. Expected a dictionary, but got ${pythonType(body)}.`],
      },
    };
  }
  const input = body as Record<string, unknown>;
  const data: Record<string, unknown> = {};
  const errors: FieldErrors = {};
  for (const [name, spec] of Object.entries(specs)) {
    const required = spec.required === true;
    if (!Object.prototype.hasOwnProperty.call(input, name)) {
      if (required) errors[name] = ['This field is required.'];
      continue;
    }
    const value = input[name];
    if (value === null) {
      if (spec.nullable === true || (spec.kind === 'file' && !required)) data[name] = null;
      else errors[name] = ['This field may not be null.'];
      continue;
    }
    const r = toValue(value, spec, required);
    if (r.ok) data[name] = r.value;
    else errors[name] = r.errors;
  }
  return Object.keys(errors).length > 0 ? { ok: false, errors } : { ok: true, data };
}
