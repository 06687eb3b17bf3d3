import type { FhirBase, FhirRouteOptions } from './fhir-route-state';

/** Metadata key of `@FhirOperation()`: its definition, read by the OperationRegistry. */
export const FHIR_OPERATION = 'fhir-http:operation';

export type OperationLevel = 'system' | 'type' | 'instance';
export type OperationMethod = 'GET' | 'POST' | 'DELETE';

/** How an operation is invoked at one level, when it differs from the operation's defaults. */
export interface OperationLevelOptions {
  /** Resource types it serves at this level; default: the operation's `types` (or every type). */
  types?: readonly string[];
  /** Its OperationDefinition at this level (Bulk Data: export, patient-export, group-export). */
  definition?: string;
  /** FHIR bases it is served under at this level; default: the operation's `bases`. */
  bases?: readonly FhirBase[];
}

/** An operation (https://hl7.org/fhir/R4/operations.html) and where it is invoked. */
export interface FhirOperationDefinition {
  /** Without the `$`, e.g. `validate`. */
  name: string;
  /** The last path segment, when it is not `$name` (e.g. `purge`). */
  segment?: string;
  levels: readonly OperationLevel[];
  /** Resource types at type/instance level; default every type of the version. */
  types?: readonly string[];
  /** Per-level overrides of types, definition and bases. */
  at?: Partial<Record<OperationLevel, OperationLevelOptions>>;
  /**
   * An operation that changes data is invoked with POST only and needs write access; one that
   * does not may also be invoked with GET (operations.html#request) and takes read-only tokens.
   */
  affectsState?: boolean;
  /** Default: POST when it affects state, else GET and POST. */
  methods?: readonly OperationMethod[];
  /** Canonical URL of its OperationDefinition when it is a standard one. */
  definition?: string;
  description: string;
  /** Default: the store base `/{v}`. */
  bases?: readonly FhirBase[];
  /** Route options beyond what the definition implies (tenant needs, status, body). */
  route?: Omit<FhirRouteOptions, 'kind' | 'types' | 'bases'>;
}
