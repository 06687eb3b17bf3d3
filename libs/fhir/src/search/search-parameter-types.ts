/** Search parameter types of https://hl7.org/fhir/R4/valueset-search-param-type.html. */
export type SearchParamType =
  'number' | 'date' | 'string' | 'token' | 'reference' | 'composite' | 'quantity' | 'uri' | 'special';

/** One search parameter as it applies to one resource type. */
export interface SearchParamDefinition {
  readonly code: string;
  readonly type: SearchParamType;
  readonly description?: string;
  /** Resource types a reference parameter may point to (empty: any). */
  readonly targets: readonly string[];
  /** FHIRPath expressions of this parameter for this resource type (the union split per base type). */
  readonly expressions: readonly string[];
  /** Canonical URL of the SearchParameter (R4/STU3 packages; CapabilityStatement `definition`). */
  readonly url?: string;
}

/** A compiled FHIRPath expression with what extraction needs to decide whether to run it. */
export interface CompiledExpression {
  readonly evaluate: (resource: unknown) => unknown[];
  /** The fhirpath engine's evaluator of the same text: what `evaluate` answers as (simple-paths.spec). */
  readonly byEngine: (resource: unknown) => unknown[];
  /** First element below the resource root (`code` in `Observation.code`), when statically known. */
  readonly firstElement?: string;
  /** From `.where(resolve() is Patient)`: only references to this type count. */
  readonly targetType?: string;
}

export interface CompiledSearchParam extends SearchParamDefinition {
  readonly compiled: readonly CompiledExpression[];
}

/** The search parameters of one FHIR version. */
export interface VersionSearchDefinitions {
  /** Parameters that apply to every resource type (`_id`, `_lastUpdated`, `_tag`, `_profile` …). */
  readonly common: ReadonlyMap<string, SearchParamDefinition>;
  /** Type-specific parameters (common ones not repeated). */
  readonly byType: ReadonlyMap<string, ReadonlyMap<string, SearchParamDefinition>>;
  /** Patient compartment: resource type → parameters that link it to the patient. */
  readonly patientCompartment: ReadonlyMap<string, readonly string[]>;
}
