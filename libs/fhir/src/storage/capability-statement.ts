import type { FhirVersion } from '../definitions/fhir-version';

/**
 * The server's CapabilityStatement (R4/STU3, https://hl7.org/fhir/R4/capabilitystatement.html) or
 * Conformance (DSTU2), generated from what the caller says is implemented: resource types,
 * interactions, search parameters and operations. Nothing is listed that the routes do not do.
 */

export interface CapabilitySearchParam {
  name: string;
  type: string;
  documentation?: string;
}

export interface CapabilityOperation {
  name: string;
  /** Canonical URL of the OperationDefinition. */
  definition: string;
  /** Resource types the operation is declared on ([] = system level). */
  types: readonly string[];
}

export interface CapabilityInput {
  version: FhirVersion;
  /** Absolute base URL of this version's endpoint (`{base_url}/r4`). */
  baseUrl: string;
  software: { name: string; version: string };
  resourceTypes: readonly string[];
  typeInteractions: readonly string[];
  systemInteractions: readonly string[];
  searchParams: (type: string) => readonly CapabilitySearchParam[];
  operations: readonly CapabilityOperation[];
  /** Instant the statement is valid from (server start). */
  date: string;
}

const FHIR_RELEASE: Record<FhirVersion, string> = { r4: '4.0.1', stu3: '3.0.2', dstu2: '1.0.2' };

export function buildCapabilityStatement(input: CapabilityInput): Record<string, unknown> {
  const resource = input.resourceTypes.map((type) => {
    const entry: Record<string, unknown> = {
      type,
      interaction: input.typeInteractions.map((code) => ({ code })),
      versioning: 'versioned-update',
      readHistory: true,
      updateCreate: true,
      conditionalCreate: false,
      conditionalUpdate: false,
      conditionalDelete: 'not-supported',
    };
    const params = input.searchParams(type);
    if (params.length > 0) entry.searchParam = params.map((p) => ({ ...p }));
    const operations = input.operations.filter((op) => op.types.includes(type));
    if (operations.length > 0) entry.operation = operations.map(operationEntry(input.version));
    return entry;
  });
  const systemOperations = input.operations.filter((op) => op.types.length === 0);
  const rest: Record<string, unknown> = {
    mode: 'server',
    resource,
    interaction: input.systemInteractions.map((code) => ({ code })),
  };
  if (systemOperations.length > 0) rest.operation = systemOperations.map(operationEntry(input.version));
  return {
    resourceType: input.version === 'dstu2' ? 'Conformance' : 'CapabilityStatement',
    status: 'active',
    date: input.date,
    kind: 'instance',
    software: input.software,
    implementation: { description: 'FHIR data service', url: input.baseUrl },
    fhirVersion: FHIR_RELEASE[input.version],
    // DSTU2 Conformance has no `acceptUnknown`-free shape change here; both accept `format`.
    ...(input.version === 'stu3' ? { acceptUnknown: 'no' } : {}),
    format: ['application/fhir+json', 'json'],
    rest: [rest],
  };
}

/** DSTU2/STU3 reference the OperationDefinition (`definition.reference`); R4 uses a canonical. */
function operationEntry(version: FhirVersion) {
  return (op: CapabilityOperation): Record<string, unknown> => ({
    name: op.name,
    definition: version === 'r4' ? op.definition : { reference: op.definition },
  });
}
