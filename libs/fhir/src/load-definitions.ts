import { FHIR_VERSIONS, type FhirVersion } from './definitions/fhir-version';
import { elementTables } from './definitions/element-tables';
import { resourceTypes } from './definitions/resource-types';
import { structureDefinitions } from './definitions/structure-definitions';
import { compiledParamsFor } from './search/search-parameter-registry';
import { prepareValidation } from './validation/validate-resource';

/**
 * Loads everything each version's definitions are built into on first use (structure
 * definitions, element tables, the validator and its terminology, every type's compiled search
 * parameters), so that the first requests of a version do not pay for it: about 0.5 s of
 * synchronous work for R4 and 0.3 s for STU3, which would block the event loop of whatever
 * request came first. Returns the milliseconds each version took.
 */
export function loadDefinitions(versions: readonly FhirVersion[] = FHIR_VERSIONS): Record<string, number> {
  const took: Record<string, number> = {};
  for (const version of versions) {
    const started = performance.now();
    structureDefinitions(version);
    elementTables(version);
    prepareValidation(version);
    for (const type of resourceTypes(version)) compiledParamsFor(version, type);
    took[version] = Math.round(performance.now() - started);
  }
  return took;
}
