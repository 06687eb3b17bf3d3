import type { CapabilityOperation, CapabilitySearchParam, FhirVersion } from '@app/fhir';

/**
 * What other feature modules add to the FHIR API, so that `GET /{v}/metadata` states what is really
 * implemented. A module calls these once at start-up (e.g. in its module's constructor or
 * `onModuleInit`): the search module its parameters, bulk export `$export`, `$everything` …
 */
type SearchParamsProvider = (version: FhirVersion, type: string) => readonly CapabilitySearchParam[];

/** The store's own basic search (`GET /{v}/{type}?_id=`), replaced when the search module registers. */
const basicSearchParams: SearchParamsProvider = () => [
  { name: '_id', type: 'token', documentation: 'logical id, comma-separated for several' },
];

let searchParamsProvider: SearchParamsProvider = basicSearchParams;
const operations = new Map<FhirVersion, Map<string, CapabilityOperation>>();

export function registerSearchParams(provider: SearchParamsProvider): void {
  searchParamsProvider = provider;
}

export function registerOperation(versions: readonly FhirVersion[], operation: CapabilityOperation): void {
  for (const version of versions) {
    let byName = operations.get(version);
    if (!byName) operations.set(version, (byName = new Map()));
    byName.set(operation.name, operation);
  }
}

export function searchParamsOf(version: FhirVersion, type: string): readonly CapabilitySearchParam[] {
  return searchParamsProvider(version, type);
}

export function operationsOf(version: FhirVersion): CapabilityOperation[] {
  return [...(operations.get(version)?.values() ?? [])];
}
