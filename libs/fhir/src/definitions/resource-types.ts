import { DSTU2_RESOURCE_TYPES } from './dstu2-resource-types';
import type { FhirVersion } from './fhir-version';
import { structureDefinitions } from './structure-definitions';

const sortedTypes = new Map<FhirVersion, readonly string[]>();
const typeSets = new Map<FhirVersion, ReadonlySet<string>>();

/** Sorted names of the concrete resource types of a version (abstract Resource/DomainResource excluded). */
export function resourceTypes(version: FhirVersion): readonly string[] {
  let types = sortedTypes.get(version);
  if (!types) {
    const names =
      version === 'dstu2'
        ? [...DSTU2_RESOURCE_TYPES]
        : [...structureDefinitions(version).byType.values()]
            .filter((sd) => sd.kind === 'resource' && !sd.abstract)
            .map((sd) => sd.name);
    types = Object.freeze(names.sort());
    sortedTypes.set(version, types);
  }
  return types;
}

export function isResourceType(version: FhirVersion, type: string): boolean {
  let set = typeSets.get(version);
  if (!set) {
    set = new Set(resourceTypes(version));
    typeSets.set(version, set);
  }
  return set.has(type);
}
