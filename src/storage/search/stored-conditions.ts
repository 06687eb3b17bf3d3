import type { FhirVersion } from '@app/fhir';
import type { SearchClause } from '@app/fhir/search/parsed-search';
import { storedForm, type StoredForm } from '@app/fhir/search/stored-params';
import { clauseCondition, type Filter, type RangeBuckets } from './filter-clauses';

/**
 * Search conditions on the entries a parameter is stored in (libs/fhir stored-params.ts): a derived
 * parameter (`Observation.patient`, `combo-code`, `phonetic`) has no entries of its own, so its
 * clause reads those of the parameters it is made of. Data written before a parameter became
 * derived still holds its own entries too; the conditions below never read them, so both answer
 * alike.
 */

/** Matches no document (a reference of a type the parameter never selects). */
export const NO_MATCH: Filter = { id: { $in: [] } };

const RELATIVE_TYPE = /^([A-Z][A-Za-z]*)\//;

/** Whether `reference` (a search value or a stored target) can be one of `types`' references. */
function mayReferenceOneOf(reference: string, types: readonly string[]): boolean {
  if (reference.includes(':')) return true; // absolute: stored alike for both (index-builder.ts)
  const type = RELATIVE_TYPE.exec(reference)?.[1];
  return type === undefined || types.includes(type);
}

/** One `$in` when every alternative is an equality or `$in` on the same `idx` field, else `$or`. */
function unionOf(conditions: Filter[]): Filter {
  if (conditions.length === 1) return conditions[0];
  const fields = new Set(conditions.flatMap((condition) => Object.keys(condition)));
  const [field] = fields;
  const values = conditions.flatMap((condition) => {
    const keys = Object.keys(condition);
    const operand = condition[field];
    if (keys.length !== 1 || !field.startsWith('idx.')) return [undefined];
    if (typeof operand === 'string') return [operand];
    const inList = (operand as { $in?: unknown } | undefined)?.$in;
    return Object.keys(operand as object).length === 1 && Array.isArray(inList) ? inList : [undefined];
  });
  if (fields.size !== 1 || values.some((value) => value === undefined)) return { $or: conditions };
  return { [field]: { $in: values } };
}

function formCondition(form: StoredForm, clause: SearchClause, now: Date, buckets: RangeBuckets): Filter {
  switch (form.kind) {
    case 'own':
      return clauseCondition(clause, now, buckets);
    case 'union': {
      const parts = form.params.map((param) => clauseCondition({ ...clause, param }, now, buckets));
      // `:not` holds when no value equals: every part's; anything else when one part's value does
      return clause.modifier === 'not' ? { $and: parts } : unionOf(parts);
    }
    case 'restriction': {
      if (clause.modifier === 'identifier')
        return clauseCondition({ ...clause, param: form.param }, now, buckets);
      const values = clause.values.filter(
        (value) => value.kind !== 'reference' || mayReferenceOneOf(value.reference, form.targetTypes),
      );
      if (values.length === 0) return NO_MATCH;
      return clauseCondition({ ...clause, param: form.param, values }, now, buckets);
    }
  }
}

/**
 * `build(form)` for the resources of `types`: types that store `param` differently get one
 * alternative each, bound to their types.
 */
function perStoredForm(
  version: FhirVersion,
  types: readonly string[],
  param: string,
  build: (form: StoredForm) => Filter,
): Filter {
  const groups = new Map<string, { form: StoredForm; types: string[] }>();
  for (const type of types) {
    const form = storedForm(version, type, param);
    const key = JSON.stringify(form);
    const group = groups.get(key);
    if (group) group.types.push(type);
    else groups.set(key, { form, types: [type] });
  }
  const alternatives = [...groups.values()];
  if (alternatives.length === 1) return build(alternatives[0].form);
  return {
    $or: alternatives.map((group) => ({
      $and: [{ t: group.types.length === 1 ? group.types[0] : { $in: group.types } }, build(group.form)],
    })),
  };
}

/**
 * The condition of `clause` on resources of `types` (undefined: a search across every type, whose
 * parameters are the common ones, never derived).
 */
export function storedClauseCondition(
  version: FhirVersion,
  types: readonly string[] | undefined,
  clause: SearchClause,
  now: Date,
  buckets: RangeBuckets = 'bounded',
): Filter {
  // `has` markers are kept for every parameter, derived or not
  if (!types?.length || clause.modifier === 'missing' || clause.param.startsWith('_'))
    return clauseCondition(clause, now, buckets);
  return perStoredForm(version, types, clause.param, (form) => formCondition(form, clause, now, buckets));
}

/** The stored `idx.ref` entry meaning "`param` references `reference`" under `form` (none: never). */
function referenceEntry(form: StoredForm, param: string, reference: string): string | undefined {
  if (form.kind !== 'restriction') return `${param}|${reference}`;
  return mayReferenceOneOf(reference, form.targetTypes) ? `${form.param}|${reference}` : undefined;
}

/**
 * Resources of `types` whose `param` references one of `references` (`Type/id`): a chain's
 * matches, a `_revinclude`'s sources.
 */
export function storedReferenceCondition(
  version: FhirVersion,
  types: readonly string[] | undefined,
  param: string,
  references: readonly string[],
): Filter {
  const build = (form: StoredForm): Filter => {
    const entries = references.flatMap((reference) => referenceEntry(form, param, reference) ?? []);
    return entries.length === 0 && references.length > 0 ? NO_MATCH : { 'idx.ref': { $in: entries } };
  };
  return types?.length ? perStoredForm(version, types, param, build) : build({ kind: 'own' });
}

/** The stored `idx.ref` entries meaning "`param` of `type` references one of `references`". */
export function storedReferenceEntries(
  version: FhirVersion,
  type: string,
  param: string,
  references: readonly string[],
): string[] {
  const form = storedForm(version, type, param);
  return references.flatMap((reference) => referenceEntry(form, param, reference) ?? []);
}

/**
 * The prefix of the stored `idx.ref` entries of `param` of `type` that point at a `targetType`
 * (`_has`): the parameter's own when it never selects that type (no entry has it).
 */
export function storedReferencePrefix(
  version: FhirVersion,
  type: string,
  param: string,
  targetType: string,
): string {
  const own = `${param}|${targetType}/`;
  return referenceEntry(storedForm(version, type, param), param, `${targetType}/`) ?? own;
}

/**
 * How `_include` recognises the stored entries of `params` of `type`: the entry's parameter, and
 * the target types it stands for (undefined: any).
 */
export function storedReferenceParams(
  version: FhirVersion,
  type: string,
  params: readonly string[],
): Array<{ param: string; targetTypes?: readonly string[] }> {
  return params.map((param) => {
    const form = storedForm(version, type, param);
    return form.kind === 'restriction' ? { param: form.param, targetTypes: form.targetTypes } : { param };
  });
}
