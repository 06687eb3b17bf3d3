export * from './outcome';
export * from './definitions/fhir-version';
export * from './definitions/resource-types';
export { structureDefinitions } from './definitions/structure-definitions';
export type { StructureDefinitionSet, BaseStructureDefinition } from './definitions/structure-definitions';
export type { ValidationIssue, ValidationIssueCode } from './validation/validation-issue';
export { validateResource, isValidId } from './validation/validate-resource';
export * from './storage';
export * from './search';
