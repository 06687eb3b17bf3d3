import type { FhirVersion } from '../definitions/fhir-version';
import { fhirJsonType } from './content-negotiation';

/**
 * The server's CapabilityStatement (R4/STU3, https://hl7.org/fhir/R4/capabilitystatement.html) or
 * Conformance (DSTU2, https://hl7.org/fhir/DSTU2/conformance.html), generated from what the caller
 * says is implemented: resource types, interactions, search parameters, includes, operations and
 * security. No element is written without a value (no empty arrays).
 */

export interface CapabilitySearchParam {
  name: string;
  type: string;
  /** Canonical URL of the SearchParameter. */
  definition?: string;
  documentation?: string;
}

export interface CapabilityOperation {
  name: string;
  /** Canonical URL of the OperationDefinition. */
  definition: string;
  /** Resource types the operation is declared on ([] = system level). */
  types: readonly string[];
}

export interface CapabilitySecurity {
  tokenUrl: string;
  /** Where authorization codes come from: the `authorize` URI SMART's oauth-uris extension requires. */
  authorizeUrl: string;
  description: string;
}

export interface CapabilityInput {
  version: FhirVersion;
  /** Absolute base URL of this endpoint (`{base_url}/r4`, a bulk base …). */
  baseUrl: string;
  software: { name: string; version: string };
  resourceTypes: readonly string[];
  typeInteractions: readonly string[];
  systemInteractions: readonly string[];
  searchParams: (type: string) => readonly CapabilitySearchParam[];
  searchInclude?: (type: string) => readonly string[];
  searchRevInclude?: (type: string) => readonly string[];
  /** Parameters every search takes (`_count`, `_sort` …), listed once at the rest level. */
  commonSearchParams?: readonly CapabilitySearchParam[];
  operations: readonly CapabilityOperation[];
  /** Compartments served for compartment search: canonical URLs of their CompartmentDefinitions. */
  compartments?: readonly string[];
  /** Canonical CapabilityStatements this server implements (the Bulk Data IG's), R4/STU3. */
  instantiates?: readonly string[];
  security?: CapabilitySecurity;
  /** Patch formats (R4/STU3); none = no `patch` interaction. */
  patchFormats?: readonly string[];
  /** Instant the statement is valid from (server start). */
  date: string;
}

const FHIR_RELEASE: Record<FhirVersion, string> = { r4: '4.0.1', stu3: '3.0.2', dstu2: '1.0.2' };
const SMART_OAUTH_URIS = 'http://fhir-registry.smarthealthit.org/StructureDefinition/oauth-uris';
const SECURITY_SERVICE_SYSTEM: Record<FhirVersion, string> = {
  r4: 'http://terminology.hl7.org/CodeSystem/restful-security-service',
  stu3: 'http://hl7.org/fhir/restful-security-service',
  dstu2: 'http://hl7.org/fhir/restful-security-service',
};

const nonEmpty = <T>(list: readonly T[] | undefined): list is readonly T[] => !!list && list.length > 0;

export function buildCapabilityStatement(input: CapabilityInput): Record<string, unknown> {
  const { version } = input;
  const patch = version !== 'dstu2' && nonEmpty(input.patchFormats);
  const resource = input.resourceTypes.map((type) => {
    const entry: Record<string, unknown> = {
      type,
      interaction: input.typeInteractions
        .filter((code) => code !== 'patch' || patch)
        .map((code) => ({ code })),
      versioning: 'versioned-update',
      readHistory: true,
      updateCreate: true,
      conditionalCreate: true,
      // If-None-Match and If-Modified-Since on reads answer 304 (docs/api.md §6)
      conditionalRead: 'full-support',
      conditionalUpdate: true,
      conditionalDelete: 'single',
    };
    if (version === 'dstu2') delete entry.conditionalRead; // not in DSTU2
    const include = input.searchInclude?.(type);
    if (nonEmpty(include)) entry.searchInclude = [...include];
    const revinclude = input.searchRevInclude?.(type);
    if (nonEmpty(revinclude)) entry.searchRevInclude = [...revinclude];
    const params = input.searchParams(type);
    if (params.length > 0) entry.searchParam = params.map(searchParamEntry());
    // resource-level operations exist from R4 on; STU3/DSTU2 list every operation at rest level
    const operations = version === 'r4' ? input.operations.filter((op) => op.types.includes(type)) : [];
    if (operations.length > 0) entry.operation = operations.map(operationEntry(version));
    return entry;
  });
  const rest: Record<string, unknown> = { mode: 'server' };
  if (input.security) rest.security = securityEntry(version, input.security);
  rest.resource = resource;
  rest.interaction = input.systemInteractions.map((code) => ({ code }));
  if (nonEmpty(input.commonSearchParams)) rest.searchParam = input.commonSearchParams.map(searchParamEntry());
  const systemOperations =
    version === 'r4'
      ? input.operations.filter((op) => op.types.length === 0)
      : input.operations.filter((op, i, all) => all.findIndex((o) => o.name === op.name) === i);
  if (systemOperations.length > 0) rest.operation = systemOperations.map(operationEntry(version));
  // rest.compartment: in every version (uri in DSTU2/STU3, canonical in R4)
  if (nonEmpty(input.compartments)) rest.compartment = [...input.compartments];
  const statement: Record<string, unknown> = {
    resourceType: version === 'dstu2' ? 'Conformance' : 'CapabilityStatement',
    status: 'active',
    date: input.date,
    publisher: input.software.name,
    kind: 'instance',
  };
  if (version !== 'dstu2' && nonEmpty(input.instantiates)) statement.instantiates = [...input.instantiates];
  Object.assign(statement, {
    software: input.software,
    implementation: { description: 'FHIR data service', url: input.baseUrl },
    fhirVersion: FHIR_RELEASE[version],
  });
  // DSTU2 and STU3 require acceptUnknown (removed in R4)
  if (version !== 'r4') statement.acceptUnknown = 'no';
  // the one format served, in the version's own spelling (content-negotiation.ts)
  statement.format = [fhirJsonType(version)];
  if (patch) statement.patchFormat = [...input.patchFormats!];
  statement.rest = [rest];
  return statement;
}

/**
 * `rest.security`: the SMART service coding and the `oauth-uris` extension SMART clients read
 * (https://hl7.org/fhir/smart-app-launch/1.0.0/conformance/index.html#declaring-support-for-oauth2-endpoints).
 */
function securityEntry(version: FhirVersion, security: CapabilitySecurity): Record<string, unknown> {
  // authorize and token are both 1..1 in the extension's definition
  // (http://fhir-registry.smarthealthit.org/StructureDefinition/oauth-uris)
  const uris = [
    { url: 'authorize', valueUri: security.authorizeUrl },
    { url: 'token', valueUri: security.tokenUrl },
  ];
  const out: Record<string, unknown> = {
    extension: [{ url: SMART_OAUTH_URIS, extension: uris }],
    service: [
      {
        coding: [
          { system: SECURITY_SERVICE_SYSTEM[version], code: 'SMART-on-FHIR', display: 'SMART-on-FHIR' },
        ],
        text: 'OAuth2 using SMART-on-FHIR profile (see http://docs.smarthealthit.org)',
      },
    ],
    description: security.description,
  };
  if (version !== 'dstu2') out.cors = true;
  return out;
}

function searchParamEntry() {
  return (param: CapabilitySearchParam): Record<string, unknown> => {
    const out: Record<string, unknown> = { name: param.name };
    if (param.definition) out.definition = param.definition;
    out.type = param.type;
    if (param.documentation) out.documentation = param.documentation;
    return out;
  };
}

/** DSTU2/STU3 reference the OperationDefinition (`definition.reference`); R4 uses a canonical. */
function operationEntry(version: FhirVersion) {
  return (op: CapabilityOperation): Record<string, unknown> => ({
    name: op.name,
    definition: version === 'r4' ? op.definition : { reference: op.definition },
  });
}
