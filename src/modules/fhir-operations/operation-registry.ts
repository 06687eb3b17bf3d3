/**
 * The registry of FHIR operations (https://hl7.org/fhir/R4/operations.html) served by this
 * server. An operation is a Nest module whose controller is decorated with `@FhirOperation(...)`;
 * the decorator records it here, and the CapabilityStatement lists what is recorded.
 * Adding an operation = generate a module with the Nest CLI, decorate its controller, add the
 * module to OPERATION_MODULES (operation-modules.ts). See docs/extending.md.
 */
export type OperationLevel = 'system' | 'type' | 'instance';

export interface FhirOperationDefinition {
  /** Without the `$`, e.g. `validate`. */
  name: string;
  levels: OperationLevel[];
  /** Resource types it applies to at type/instance level; empty = every type. */
  resourceTypes?: string[];
  /** Canonical URL of the OperationDefinition, when it is a standard one. */
  definition?: string;
  description: string;
}

const registry = new Map<string, FhirOperationDefinition>();

export function FhirOperation(def: FhirOperationDefinition): ClassDecorator {
  return () => {
    registry.set(def.name, def);
  };
}

export function registeredOperations(): readonly FhirOperationDefinition[] {
  return [...registry.values()].sort((a, b) => a.name.localeCompare(b.name));
}
