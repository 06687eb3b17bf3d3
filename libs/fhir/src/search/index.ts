export * from './search-error';
export * from './search-index';
export * from './patient-compartment-key';
export * from './search-parameter-types';
export * from './parsed-search';
export { extractIndex, contentWords, type ExtractIndexOptions } from './index-extraction';
export {
  searchParamsFor,
  patientCompartmentParams,
  searchParamDefinition,
} from './search-parameter-registry';
export { parseSearch, type SearchQueryInput } from './search-parser';
export { escapeRegex, normalizeText } from './text-normalization';
export { parseFhirDateRange, plusForSpace, type DateRange } from './fhir-date-range';
export { shapedResourceJson, SUBSETTED_TAG } from './resource-subset';
