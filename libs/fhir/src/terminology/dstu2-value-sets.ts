import dstu2Definitions from '../definitions/dstu2-structure-definitions.json';
import type { BoundValueSet } from './terminology';

/**
 * The value sets of DSTU2's required bindings (https://hl7.org/fhir/DSTU2/terminologies.html#required),
 * listed in full by scripts/dstu2-definitions.js from the 1.0.2 value set bundles: only those whose
 * every code is known there carry a binding, so a code outside one is outside the value set.
 * Codes of DSTU2 code systems are compared exactly (FHIR-defined codes are case-sensitive).
 */
export interface Dstu2ValueSets {
  valueSet(url: string): BoundValueSet | undefined;
}

const listed = (dstu2Definitions as { valueSets?: Record<string, Record<string, string[]>> }).valueSets ?? {};
const compiled = new Map<string, BoundValueSet>();

function compile(url: string): BoundValueSet | undefined {
  const bySystem = listed[url];
  if (!bySystem) return undefined;
  const codes = new Map(Object.entries(bySystem).map(([system, list]) => [system, new Set(list)]));
  const any = new Set(Object.values(bySystem).flat());
  return {
    url,
    has: (system, code) => (system === undefined ? any.has(code) : (codes.get(system)?.has(code) ?? false)),
    hasSystem: (system) => codes.has(system),
  };
}

export const DSTU2_VALUE_SETS: Dstu2ValueSets = {
  valueSet(url) {
    let valueSet = compiled.get(url);
    if (!valueSet) {
      valueSet = compile(url);
      if (valueSet) compiled.set(url, valueSet);
    }
    return valueSet;
  },
};
