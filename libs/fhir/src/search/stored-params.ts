import type { FhirVersion } from '../definitions/fhir-version';
import { rewriteResolve } from './fhirpath-expressions';
import { searchDefinitions } from './search-parameter-registry';
import type { SearchParamDefinition } from './search-parameter-types';

/**
 * Where a parameter's index entries live. Many base parameters are another parameter's values
 * again: `Observation.patient` is `Observation.subject.where(resolve() is Patient)` (the subject's
 * references to a Patient), `combo-code` is `Observation.code | Observation.component.code` (the
 * entries of `code` and `component-code`), `phonetic` is `Patient.name` like `name`. Storing them
 * twice costs every write an index entry per value (each multikey entry is most of a write's
 * engine time, docs/storage.md "Derived parameters"), so such a parameter stores no entries of
 * its own (only its `has` marker and sort key) and a search reads the entries it is made of:
 * - `own`: the parameter's own entries;
 * - `union`: the entries of each of `params` (the union of their expressions is this one's);
 * - `restriction`: the entries of `param` that reference one of `targetTypes`, plus its canonical
 *   (absolute) and identifier entries, which the extraction stores for both alike.
 * Derived only from the definitions, so the same rule holds at write time (index-extraction.ts)
 * and at search time (the filter builder, includes, chains, `_has`).
 */
export type StoredForm =
  | { readonly kind: 'own' }
  | { readonly kind: 'union'; readonly params: readonly string[] }
  | { readonly kind: 'restriction'; readonly param: string; readonly targetTypes: readonly string[] };

const OWN: StoredForm = { kind: 'own' };
/** Stored in top-level fields or not indexed at all: never derived. */
const NEVER_DERIVED_TYPES = new Set(['composite', 'special']);

type Forms = ReadonlyMap<string, StoredForm>;
const formsByVersion = new Map<FhirVersion, Map<string, Forms>>();

function expressionSet(definition: SearchParamDefinition): Set<string> {
  return new Set(definition.expressions.map((expression) => expression.trim()));
}

function sameSet(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  return a.size === b.size && [...a].every((item) => b.has(item));
}

function subsetOf(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  return [...a].every((item) => b.has(item));
}

function acceptsTarget(definition: SearchParamDefinition, type: string): boolean {
  const targets = definition.targets;
  return targets.length === 0 || targets.includes('Resource') || targets.includes(type);
}

interface Restriction {
  definition: SearchParamDefinition;
  base: Set<string>;
  targetTypes: readonly string[];
}

/**
 * The references a reference parameter selects of another's: every part `X.where(resolve() is T)`
 * (one T; read as the extraction compiles it, fhirpath-expressions.ts `rewriteResolve`) selects the
 * T references of the parts X; parts with no `where` and only concrete target types select the
 * references of those types of the same parts (STU3's `Observation.patient` is `Observation.subject`
 * with the targets Patient and Group, and the extraction keeps only those).
 */
function restrictionOf(definition: SearchParamDefinition): Restriction | undefined {
  const parts = definition.expressions.map((expression) => rewriteResolve(expression.trim()));
  if (parts.some((part) => part === undefined)) return undefined;
  const targetType = parts[0]?.targetType;
  if (targetType === undefined) {
    const targets = definition.targets;
    if (parts.some((part) => part!.targetType !== undefined)) return undefined;
    if (targets.length === 0 || targets.includes('Resource')) return undefined;
    return { definition, base: expressionSet(definition), targetTypes: targets };
  }
  if (parts.some((part) => part!.targetType !== targetType)) return undefined;
  if (!acceptsTarget(definition, targetType)) return undefined;
  return {
    definition,
    base: new Set(parts.map((part) => part!.expression.trim())),
    targetTypes: [targetType],
  };
}

/** The definitions of one type by code, type-specific ones over common ones (searchParamDefinition's rule). */
function definitionsOf(version: FhirVersion, type: string): SearchParamDefinition[] {
  const definitions = searchDefinitions(version);
  const byCode = new Map(definitions.common);
  for (const [code, definition] of definitions.byType.get(type) ?? []) byCode.set(code, definition);
  return [...byCode.values()].filter(
    (definition) => definition.expressions.length > 0 && !NEVER_DERIVED_TYPES.has(definition.type),
  );
}

function formsOf(version: FhirVersion, type: string): Forms {
  let byType = formsByVersion.get(version);
  if (!byType) formsByVersion.set(version, (byType = new Map()));
  let forms = byType.get(type);
  if (forms) return forms;
  const definitions = definitionsOf(version, type);
  const sets = new Map(definitions.map((definition) => [definition.code, expressionSet(definition)]));
  const result = new Map<string, StoredForm>();
  const owned: SearchParamDefinition[] = [];
  const restrictions: Restriction[] = [];
  // Smaller expression sets first (then by code), so that a parameter is only ever derived from
  // parameters already known to keep their own entries; restrictions last, from those.
  const bySize = (a: SearchParamDefinition, b: SearchParamDefinition) =>
    sets.get(a.code)!.size - sets.get(b.code)!.size || (a.code < b.code ? -1 : 1);
  for (const definition of [...definitions].sort(bySize)) {
    if (definition.type === 'reference') {
      const restriction = restrictionOf(definition);
      if (restriction) restrictions.push(restriction);
      else owned.push(definition);
      continue;
    }
    const form = unionForm(definition, sets, owned);
    if (form) result.set(definition.code, form);
    else owned.push(definition);
  }
  // the widest first: a parameter can only be the base of one that selects fewer target types
  restrictions.sort(
    (a, b) => b.targetTypes.length - a.targetTypes.length || (a.definition.code < b.definition.code ? -1 : 1),
  );
  for (const restriction of restrictions) {
    const form = restrictionForm(restriction, sets, owned);
    if (form) result.set(restriction.definition.code, form);
    else owned.push(restriction.definition);
  }
  forms = result;
  byType.set(type, forms);
  return forms;
}

function restrictionForm(
  restriction: Restriction,
  sets: ReadonlyMap<string, Set<string>>,
  owned: readonly SearchParamDefinition[],
): StoredForm | undefined {
  const base = owned.find(
    (other) =>
      other.type === 'reference' &&
      other.code !== restriction.definition.code &&
      sameSet(sets.get(other.code)!, restriction.base) &&
      restriction.targetTypes.every((type) => acceptsTarget(other, type)),
  );
  return base && { kind: 'restriction', param: base.code, targetTypes: restriction.targetTypes };
}

/** A union (or a copy) of parameters of the same type: each part's values are another's entries. */
function unionForm(
  definition: SearchParamDefinition,
  sets: ReadonlyMap<string, Set<string>>,
  owned: readonly SearchParamDefinition[],
): StoredForm | undefined {
  const own = sets.get(definition.code)!;
  const parts = owned.filter(
    (other) => other.type === definition.type && subsetOf(sets.get(other.code)!, own),
  );
  const covered = new Set(parts.flatMap((other) => [...sets.get(other.code)!]));
  if (parts.length === 0 || !sameSet(covered, own)) return undefined;
  // the fewest parameters: one whose parts a wider one already covers adds only query keys
  const minimal = parts.filter((other) => {
    const mine = sets.get(other.code)!;
    return !parts.some(
      (wider) => sets.get(wider.code)!.size > mine.size && subsetOf(mine, sets.get(wider.code)!),
    );
  });
  return { kind: 'union', params: minimal.map((other) => other.code) };
}

/** Where the entries of `code` on `type` are stored (`own` for unknown codes). */
export function storedForm(version: FhirVersion, type: string, code: string): StoredForm {
  return formsOf(version, type).get(code) ?? OWN;
}

const derivedByType = new Map<string, ReadonlySet<string>>();

/** Parameters of `type` that store no entries of their own (extraction keeps only `has` and the sort key). */
export function derivedParams(version: FhirVersion, type: string): ReadonlySet<string> {
  const key = `${version}|${type}`;
  let derived = derivedByType.get(key);
  if (!derived) derivedByType.set(key, (derived = new Set(formsOf(version, type).keys())));
  return derived;
}
