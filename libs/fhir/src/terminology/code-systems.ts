import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { DefinedFhirVersion } from '../definitions/fhir-version';
import { packageDirectory, readPackageJson } from '../definitions/structure-definitions';

/**
 * The CodeSystems of the version's HL7 package (R4: 1,062, STU3: its own set), indexed once: every
 * code with its ancestors, so `is-a` filters and "is this code defined?" are map look-ups.
 * https://hl7.org/fhir/R4/codesystem.html
 */
export interface CodeSystemIndex {
  readonly url: string;
  /** Only `content = complete` systems can say a code is not defined. */
  readonly complete: boolean;
  readonly caseSensitive: boolean;
  /** code → its ancestors (nearest first), from nested `concept` and the `parent` property. */
  readonly codes: ReadonlyMap<string, readonly string[]>;
  /** code → property code → values, for `property = value` filters. */
  readonly properties: ReadonlyMap<string, ReadonlyMap<string, readonly string[]>>;
}

interface RawConcept {
  code?: string;
  concept?: RawConcept[];
  property?: { code?: string; valueCode?: string; valueString?: string; valueBoolean?: boolean }[];
}
interface RawCodeSystem {
  resourceType?: string;
  url?: string;
  content?: string;
  caseSensitive?: boolean;
  concept?: RawConcept[];
}

/** A ValueSet as read from the package: only its compose part is needed to expand it. */
export interface RawValueSet {
  resourceType?: string;
  url?: string;
  compose?: {
    include?: RawInclude[];
    exclude?: RawInclude[];
  };
}
export interface RawInclude {
  system?: string;
  concept?: { code?: string }[];
  filter?: { property?: string; op?: string; value?: string }[];
  valueSet?: string[];
}

export interface TerminologyPackage {
  readonly codeSystems: ReadonlyMap<string, CodeSystemIndex>;
  readonly valueSets: ReadonlyMap<string, RawValueSet>;
}

/** Reads the package's CodeSystem and ValueSet files (STU3 also nests CodeSystems in ValueSets). */
export function loadTerminologyPackage(version: DefinedFhirVersion): TerminologyPackage {
  const directory = packageDirectory(version);
  const codeSystems = new Map<string, CodeSystemIndex>();
  const valueSets = new Map<string, RawValueSet>();
  for (const file of readdirSync(directory)) {
    if (!file.endsWith('.json')) continue;
    const isCodeSystem = file.startsWith('CodeSystem-');
    if (!isCodeSystem && !file.startsWith('ValueSet-')) continue;
    const raw = readPackageJson(join(directory, file)) as RawCodeSystem & RawValueSet;
    if (!raw.url) continue;
    if (raw.resourceType === 'CodeSystem') codeSystems.set(raw.url, indexCodeSystem(raw));
    else if (raw.resourceType === 'ValueSet') valueSets.set(raw.url.split('|')[0], raw);
  }
  return { codeSystems, valueSets };
}

function indexCodeSystem(raw: RawCodeSystem): CodeSystemIndex {
  const codes = new Map<string, string[]>();
  const properties = new Map<string, Map<string, string[]>>();
  const visit = (concepts: readonly RawConcept[] | undefined, ancestors: readonly string[]): void => {
    for (const concept of concepts ?? []) {
      if (!concept.code) continue;
      const own = [...ancestors];
      for (const property of concept.property ?? []) {
        if (!property.code) continue;
        const value = property.valueCode ?? property.valueString ?? String(property.valueBoolean);
        if (property.code === 'parent' || property.code === 'subsumedBy') own.push(value);
        let byCode = properties.get(concept.code);
        if (!byCode) properties.set(concept.code, (byCode = new Map()));
        byCode.set(property.code, [...(byCode.get(property.code) ?? []), value]);
      }
      codes.set(concept.code, own);
      visit(concept.concept, [concept.code, ...ancestors]);
    }
  };
  visit(raw.concept, []);
  return {
    url: raw.url as string,
    complete: raw.content === 'complete' || (raw.content === undefined && codes.size > 0),
    caseSensitive: raw.caseSensitive !== false,
    codes,
    properties,
  };
}

/** Whether `code` is `ancestor` or one of its descendants (is-a). Ancestors are transitive. */
export function isA(
  system: CodeSystemIndex,
  code: string,
  ancestor: string,
  seen = new Set<string>(),
): boolean {
  if (code === ancestor) return true;
  if (seen.has(code)) return false;
  seen.add(code);
  for (const parent of system.codes.get(code) ?? []) if (isA(system, parent, ancestor, seen)) return true;
  return false;
}
