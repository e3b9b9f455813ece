/**
 * What a resource's field table becomes: a request schema and a response
 * schema. Request schemas hold the "both" fields only (a create's body lists
 * only those); response schemas hold every field. The API does not say which
 * fields are required or nullable, so every field is optional and, in
 * responses, nullable: we check types, never presence. Response objects are
 * loose: fields the API does not list are kept, not dropped. Integers must be
 * safe integers, so that an id such as a 12-digit HubSpot `crm_company_id`
 * round-trips exactly.
 */
import { z } from 'zod';

export const int = z
  .number()
  .int()
  .refine(Number.isSafeInteger, 'integer beyond 2^53 loses precision');
export const str = z.string();
export const bool = z.boolean();
export const dateTime = z.string();
export const json = z.record(z.string(), z.unknown());

/** Response field: the type is checked, presence and null are not. */
type Field = z.ZodType;
export function opt<T extends Field>(t: T) {
  return t.nullable().optional();
}

/** Builds request, response and their types from one field table. */
export function resource<Both extends z.ZodRawShape, ResponseOnly extends z.ZodRawShape>(
  both: Both,
  responseOnly: ResponseOnly,
) {
  const wrap = <S extends z.ZodRawShape>(shape: S) =>
    Object.fromEntries(Object.entries(shape).map(([k, v]) => [k, opt(v as Field)])) as unknown as {
      [K in keyof S]: z.ZodOptional<z.ZodNullable<S[K]>>;
    };
  return {
    request: z.strictObject(wrap(both)),
    response: z.looseObject({ ...wrap(responseOnly), ...wrap(both) }),
  };
}
