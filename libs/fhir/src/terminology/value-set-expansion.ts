import { isA, type CodeSystemIndex, type RawInclude, type TerminologyPackage } from './code-systems';

/**
 * A ValueSet expanded once into plain sets (https://hl7.org/fhir/R4/valueset.html#expansion).
 * `codes` holds the enumerated codes per system; `openSystems` the systems included whole that cannot
 * be enumerated from the package (UCUM, BCP-47, MIME types, currencies, SNOMED …): their codes are
 * judged by the external-system checks instead. `complete` is false when part of the set could not be
 * expanded here (an unknown ValueSet import or filter): then a code outside `codes` is not an error.
 */
export interface Expansion {
  readonly url: string;
  readonly codes: ReadonlyMap<string, ReadonlySet<string>>;
  readonly openSystems: ReadonlySet<string>;
  readonly complete: boolean;
}

/** Codes are looked up per system; a `code` element has no system, so this union serves it. */
export function allCodes(expansion: Expansion): ReadonlySet<string> {
  const all = new Set<string>();
  for (const codes of expansion.codes.values()) for (const code of codes) all.add(code);
  return all;
}

/** Guards against ValueSets that import each other in a cycle. */
const MAX_IMPORT_DEPTH = 10;

export class ValueSetExpander {
  private readonly cache = new Map<string, Expansion>();

  constructor(private readonly terminology: TerminologyPackage) {}

  /** The expansion of a ValueSet of the package, or undefined when the package does not hold it. */
  expand(url: string, depth = 0): Expansion | undefined {
    const cached = this.cache.get(url);
    if (cached) return cached;
    const valueSet = this.terminology.valueSets.get(url);
    if (!valueSet || depth > MAX_IMPORT_DEPTH) return undefined;
    const codes = new Map<string, Set<string>>();
    const openSystems = new Set<string>();
    let complete = true;
    for (const include of valueSet.compose?.include ?? []) {
      if (!this.include(include, codes, openSystems, depth)) complete = false;
    }
    for (const exclude of valueSet.compose?.exclude ?? []) {
      const removed = new Map<string, Set<string>>();
      this.include(exclude, removed, new Set(), depth);
      for (const [system, set] of removed) for (const code of set) codes.get(system)?.delete(code);
    }
    const expansion: Expansion = { url, codes, openSystems, complete };
    this.cache.set(url, expansion);
    return expansion;
  }

  /** Adds one include; false when it could not be expanded fully. */
  private include(
    include: RawInclude,
    codes: Map<string, Set<string>>,
    openSystems: Set<string>,
    depth: number,
  ): boolean {
    let complete = true;
    let selected: Map<string, Set<string>> | undefined;
    for (const imported of include.valueSet ?? []) {
      const expansion = this.expand(imported.split('|')[0], depth + 1);
      if (!expansion) return false;
      if (!expansion.complete) complete = false;
      for (const system of expansion.openSystems) openSystems.add(system);
      // Several imports (and a system) intersect: keep what every one of them holds.
      selected = selected ? intersect(selected, expansion.codes) : copy(expansion.codes);
    }
    if (include.system) {
      const system = include.system;
      const fromSystem = this.fromSystem(include, system);
      if (fromSystem === 'open') {
        // Not defined in the package: a listed code is enumerated, a whole or filtered system is
        // judged by its external check (grammar or library), less strictly than the filter says.
        if (!include.concept) openSystems.add(system);
        else {
          const listed = new Map([
            [system, new Set(include.concept.flatMap((c) => (c.code ? [c.code] : [])))],
          ]);
          selected = selected ? intersect(selected, listed) : listed;
        }
      } else if (fromSystem === 'unexpandable') {
        return false;
      } else {
        const own = new Map([[system, fromSystem]]);
        selected = selected ? intersect(selected, own) : own;
      }
    }
    for (const [system, set] of selected ?? []) {
      let target = codes.get(system);
      if (!target) codes.set(system, (target = new Set()));
      for (const code of set) target.add(code);
    }
    return complete;
  }

  /** Codes an include selects from its system; 'open' for systems not defined in the package. */
  private fromSystem(include: RawInclude, url: string): Set<string> | 'open' | 'unexpandable' {
    const system = this.terminology.codeSystems.get(url);
    if (!system || !system.complete) return 'open';
    if (include.concept) return new Set(include.concept.flatMap((c) => (c.code ? [c.code] : [])));
    let selected = new Set(system.codes.keys());
    for (const filter of include.filter ?? []) {
      const next = applyFilter(system, selected, filter.property, filter.op, filter.value);
      if (!next) return 'unexpandable';
      selected = next;
    }
    return selected;
  }
}

/** The filters the base ValueSets use on FHIR-defined systems (https://hl7.org/fhir/R4/valueset-filter-operator.html). */
function applyFilter(
  system: CodeSystemIndex,
  selected: ReadonlySet<string>,
  property: string | undefined,
  op: string | undefined,
  value: string | undefined,
): Set<string> | undefined {
  if (value === undefined) return undefined;
  const keep = (test: (code: string) => boolean) => new Set([...selected].filter(test));
  if (property === 'concept' || property === 'code') {
    if (op === 'is-a') return keep((code) => isA(system, code, value));
    if (op === 'descendent-of') return keep((code) => code !== value && isA(system, code, value));
    if (op === 'is-not-a') return keep((code) => !isA(system, code, value));
    if (op === 'in') return keep((code) => value.split(',').includes(code));
    if (op === '=') return keep((code) => code === value);
    return undefined;
  }
  if (op === '=' && property) {
    return keep((code) => system.properties.get(code)?.get(property)?.includes(value) === true);
  }
  return undefined;
}

function copy(codes: ReadonlyMap<string, ReadonlySet<string>>): Map<string, Set<string>> {
  return new Map([...codes].map(([system, set]) => [system, new Set(set)]));
}

function intersect(
  a: ReadonlyMap<string, ReadonlySet<string>>,
  b: ReadonlyMap<string, ReadonlySet<string>>,
): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const [system, set] of a) {
    const other = b.get(system);
    if (other) out.set(system, new Set([...set].filter((code) => other.has(code))));
  }
  return out;
}
