import type { FhirVersion } from '../definitions/fhir-version';
import { errorIssue, type ValidationIssue } from './validation-issue';

type JsonObject = Record<string, unknown>;

/**
 * Resource types whose `url` is the canonical URL that defines them (the reference validator's list per
 * version): ValueSet.url, CodeSystem.url … "An absolute URI that is used to identify this value set
 * when it is referenced" (https://hl7.org/fhir/R4/valueset-definitions.html#ValueSet.url), in a
 * contained resource too.
 */
const CANONICAL_RESOURCES: Readonly<Record<FhirVersion, ReadonlySet<string>>> = {
  dstu2: new Set([
    'ValueSet',
    'ConceptMap',
    'NamingSystem',
    'StructureDefinition',
    'DataElement',
    'Conformance',
    'OperationDefinition',
    'SearchParameter',
    'ImplementationGuide',
    'TestScript',
  ]),
  stu3: new Set([
    'ActivityDefinition',
    'CapabilityStatement',
    'CodeSystem',
    'CompartmentDefinition',
    'ConceptMap',
    'DataElement',
    'ExpansionProfile',
    'GraphDefinition',
    'ImplementationGuide',
    'Measure',
    'MessageDefinition',
    'OperationDefinition',
    'PlanDefinition',
    'Questionnaire',
    'SearchParameter',
    'ServiceDefinition',
    'StructureDefinition',
    'StructureMap',
    'TestScript',
    'ValueSet',
  ]),
  r4: new Set([
    'ActivityDefinition',
    'CapabilityStatement',
    'ChargeItemDefinition',
    'CodeSystem',
    'CompartmentDefinition',
    'ConceptMap',
    'EffectEvidenceSynthesis',
    'EventDefinition',
    'Evidence',
    'EvidenceVariable',
    'ExampleScenario',
    'GraphDefinition',
    'ImplementationGuide',
    'Library',
    'Measure',
    'MessageDefinition',
    'NamingSystem',
    'OperationDefinition',
    'PlanDefinition',
    'Questionnaire',
    'ResearchDefinition',
    'ResearchElementDefinition',
    'RiskEvidenceSynthesis',
    'SearchParameter',
    'StructureDefinition',
    'StructureMap',
    'TerminologyCapabilities',
    'TestScript',
    'ValueSet',
  ]),
};

/** RFC 3986 absolute URI: a scheme, a colon and something after it (`urn:uuid:…`, `http://…`). */
const ABSOLUTE_URI = /^[A-Za-z][A-Za-z0-9+.-]*:\S+$/;

/** The defining `url` of a canonical resource is absolute (a relative one identifies nothing). */
export function checkDefiningUrl(
  version: FhirVersion,
  resource: JsonObject,
  path: string,
  isContained: boolean,
  issues: ValidationIssue[],
): void {
  const { url, resourceType } = resource;
  if (typeof url !== 'string' || typeof resourceType !== 'string') return;
  if (!CANONICAL_RESOURCES[version].has(resourceType) || ABSOLUTE_URI.test(url)) return;
  issues.push(
    errorIssue(
      'invalid',
      `${path}.url`,
      isContained
        ? `Canonical URLs in contained resources must be absolute URLs if present (${url})`
        : `Canonical URLs must be absolute URLs if they are not fragment references (${url})`,
      'canonical-url-absolute',
    ),
  );
}
