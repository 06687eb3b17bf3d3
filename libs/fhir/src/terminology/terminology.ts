import type { DefinedFhirVersion } from '../definitions/fhir-version';
import { loadTerminologyPackage, type CodeSystemIndex } from './code-systems';
import { externalCheck, MIME_TYPES, MIME_VALUE_SETS } from './external-systems';
import { allCodes, ValueSetExpander, type Expansion } from './value-set-expansion';

/**
 * A bound value set compiled to what a check needs: `has(system, code)` answers from plain sets.
 * For a `code` element the system is implied, so `system` is undefined there.
 */
export interface BoundValueSet {
  readonly url: string;
  has(system: string | undefined, code: string): boolean;
  /** Whether any code of the system can be in the set (a coding from any other system never is). */
  hasSystem(system: string): boolean;
}

/**
 * Systems known to be outside the package and not checked here; codes from them are reported as
 * information (the reference validator, without a terminology server, says it cannot check them).
 */
export const UNCHECKED_SYSTEMS: ReadonlySet<string> = new Set([
  'http://snomed.info/sct',
  'http://loinc.org',
  'http://www.nlm.nih.gov/research/umls/rxnorm',
  'http://hl7.org/fhir/sid/ndc',
  'http://hl7.org/fhir/sid/cvx',
  'http://hl7.org/fhir/sid/icd-10',
  'http://hl7.org/fhir/sid/icd-10-cm',
  'http://hl7.org/fhir/sid/icd-9-cm',
  'http://nucc.org/provider-taxonomy',
  'http://www.ama-assn.org/go/cpt',
  'http://dicom.nema.org/resources/ontology/DCM',
]);

/**
 * Terminology of one version from its HL7 package: bound value sets are expanded once, on first use of
 * each binding, and kept; code systems are indexed once. No per-request expansion.
 */
export class Terminology {
  private readonly codeSystems: ReadonlyMap<string, CodeSystemIndex>;
  private readonly expander: ValueSetExpander;
  private readonly bound = new Map<string, BoundValueSet | null>();

  constructor(version: DefinedFhirVersion) {
    const loaded = loadTerminologyPackage(version);
    this.codeSystems = loaded.codeSystems;
    this.expander = new ValueSetExpander(loaded);
  }

  /** The compiled value set, or undefined when it cannot be judged here (not in the package, e.g. LOINC's). */
  valueSet(url: string): BoundValueSet | undefined {
    let bound = this.bound.get(url);
    if (bound === undefined) {
      bound = this.compile(url) ?? null;
      this.bound.set(url, bound);
    }
    return bound ?? undefined;
  }

  /**
   * Why a code claimed from a FHIR-defined or external system is not a code of that system, or
   * undefined when it is (or when the system cannot be checked here).
   */
  unknownCode(system: string, code: string): string | undefined {
    const index = this.codeSystems.get(system);
    if (index) {
      if (!index.complete || index.codes.has(code)) return undefined;
      if (!index.caseSensitive && [...index.codes.keys()].some((c) => c.toLowerCase() === code.toLowerCase()))
        return undefined;
      return `Unknown code '${code}' in the CodeSystem '${system}'`;
    }
    const check = externalCheck(system);
    if (check && !check(code)) return `'${code}' is not a valid code of ${system}`;
    return undefined;
  }

  /** Entries in the compiled tables, for the memory figure of the benchmark. */
  stats(): { codeSystems: number; concepts: number; boundValueSets: number; boundCodes: number } {
    let concepts = 0;
    for (const system of this.codeSystems.values()) concepts += system.codes.size;
    let boundCodes = 0;
    for (const url of this.bound.keys()) {
      const expansion = this.expander.expand(url);
      for (const codes of expansion?.codes.values() ?? []) boundCodes += codes.size;
    }
    return { codeSystems: this.codeSystems.size, concepts, boundValueSets: this.bound.size, boundCodes };
  }

  private compile(url: string): BoundValueSet | undefined {
    const expansion = this.expander.expand(url);
    if (!expansion) {
      if (!MIME_VALUE_SETS.has(url)) return undefined;
      return {
        url,
        has: (system, code) => (system === undefined || system === MIME_TYPES) && isMime(code),
        hasSystem: (system) => system === MIME_TYPES,
      };
    }
    return compileExpansion(expansion);
  }
}

function isMime(code: string): boolean {
  return externalCheck(MIME_TYPES)?.(code) ?? true;
}

function compileExpansion(expansion: Expansion): BoundValueSet {
  const any = allCodes(expansion);
  const open = [...expansion.openSystems];
  const checks = open.map((system) => externalCheck(system));
  // A system included whole but not checkable here (SNOMED …) accepts anything from it.
  const acceptsAnySystemless = checks.some((check) => check === undefined) || !expansion.complete;
  return {
    url: expansion.url,
    has(system, code) {
      if (system === undefined) {
        if (any.has(code) || acceptsAnySystemless) return true;
        return checks.some((check) => check?.(code) === true);
      }
      if (expansion.codes.get(system)?.has(code)) return true;
      const at = open.indexOf(system);
      if (at >= 0) return checks[at]?.(code) ?? true;
      return !expansion.complete;
    },
    hasSystem: (system) =>
      expansion.codes.has(system) || expansion.openSystems.has(system) || !expansion.complete,
  };
}

const byVersion = new Map<DefinedFhirVersion, Terminology>();

export function terminology(version: DefinedFhirVersion): Terminology {
  let loaded = byVersion.get(version);
  if (!loaded) byVersion.set(version, (loaded = new Terminology(version)));
  return loaded;
}
