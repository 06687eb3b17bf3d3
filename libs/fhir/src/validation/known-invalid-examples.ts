import type { DefinedFhirVersion } from '../definitions/fhir-version';

/**
 * Official example files that violate the base specification themselves, so structural validation
 * rightly reports them. One reason each; anything else failing is a validator bug to fix.
 */
export const KNOWN_INVALID_EXAMPLES: Readonly<Record<DefinedFhirVersion, Readonly<Record<string, string>>>> =
  {
    r4: {
      'ig-r4.json':
        'Package manifest, not an example: lacks ImplementationGuide.name and .status (both 1..1).',
      'ImplementationGuide-fhir.json':
        'Package manifest of the spec itself: lacks ImplementationGuide.name and .status (both 1..1).',
      'Questionnaire-qs1.json': 'Nested items lack Questionnaire.item.linkId (1..1).',
      'SearchParameter-codesystem-extensions-CodeSystem-author.json': 'Lacks SearchParameter.base (1..*).',
      'SearchParameter-codesystem-extensions-CodeSystem-effective.json': 'Lacks SearchParameter.base (1..*).',
      'SearchParameter-codesystem-extensions-CodeSystem-end.json': 'Lacks SearchParameter.base (1..*).',
      'SearchParameter-codesystem-extensions-CodeSystem-keyword.json': 'Lacks SearchParameter.base (1..*).',
      'SearchParameter-codesystem-extensions-CodeSystem-workflow.json': 'Lacks SearchParameter.base (1..*).',
      'SearchParameter-valueset-extensions-ValueSet-author.json': 'Lacks SearchParameter.base (1..*).',
      'SearchParameter-valueset-extensions-ValueSet-effective.json': 'Lacks SearchParameter.base (1..*).',
      'SearchParameter-valueset-extensions-ValueSet-end.json': 'Lacks SearchParameter.base (1..*).',
      'SearchParameter-valueset-extensions-ValueSet-keyword.json': 'Lacks SearchParameter.base (1..*).',
      'SearchParameter-valueset-extensions-ValueSet-workflow.json': 'Lacks SearchParameter.base (1..*).',
      'SearchParameter-questionnaireresponse-extensions-QuestionnaireResponse-item-subject.json':
        'Its id has 67 characters; an id has at most 64.',
    },
    stu3: {
      'ig-r4.json':
        'Package manifest in R4 format (packageId, license, manifest are R4 elements), not an STU3 example.',
      'DataElement-Identifier.system.json':
        'example valueUri holds prose with spaces ("… or urn:ietf:rfc:3986 if …"), not a uri.',
      'ImplementationGuide-fhir.json':
        'Package manifest of the spec itself: lacks ImplementationGuide.name and .status (both 1..1).',
      'Questionnaire-qs1.json': 'Nested items lack Questionnaire.item.linkId (1..1).',
      'SearchParameter-codesystem-extensions-CodeSystem-author.json': 'Lacks SearchParameter.base (1..*).',
      'SearchParameter-codesystem-extensions-CodeSystem-effective.json': 'Lacks SearchParameter.base (1..*).',
      'SearchParameter-codesystem-extensions-CodeSystem-end.json': 'Lacks SearchParameter.base (1..*).',
      'SearchParameter-codesystem-extensions-CodeSystem-keyword.json': 'Lacks SearchParameter.base (1..*).',
      'SearchParameter-codesystem-extensions-CodeSystem-workflow.json': 'Lacks SearchParameter.base (1..*).',
      'SearchParameter-location-extensions-Location-alias.json': 'Lacks SearchParameter.base (1..1).',
      'SearchParameter-organization-extensions-Organization-alias.json': 'Lacks SearchParameter.base (1..1).',
      'SearchParameter-valueset-extensions-ValueSet-author.json': 'Lacks SearchParameter.base (1..1).',
      'SearchParameter-valueset-extensions-ValueSet-effective.json': 'Lacks SearchParameter.base (1..1).',
      'SearchParameter-valueset-extensions-ValueSet-end.json': 'Lacks SearchParameter.base (1..1).',
      'SearchParameter-valueset-extensions-ValueSet-keyword.json': 'Lacks SearchParameter.base (1..1).',
      'SearchParameter-valueset-extensions-ValueSet-workflow.json': 'Lacks SearchParameter.base (1..1).',
      'StructureDefinition-Definition.json': 'Logical model pattern without StructureDefinition.type (1..1).',
      'StructureDefinition-Event.json': 'Logical model pattern without StructureDefinition.type (1..1).',
      'StructureDefinition-Request.json': 'Logical model pattern without StructureDefinition.type (1..1).',
    },
  };
