import type { Model } from 'fhirpath';

/** `Observation.code`, `Encounter.participant.individual`: member steps only, no function, no choice. */
const MEMBER_PATH = /^([A-Z][A-Za-z]*)((?:\.[a-z][A-Za-z0-9]*)+)$/;

/** Types whose nodes fhirpath.js types by their content (`resourceType`), not by the model's path. */
const CONTENT_TYPED = new Set(['Resource', 'DomainResource']);

/** One value as fhirpath.js hands it out (a ResourceNode's `data`, `path` and FHIR data type). */
export interface PathNode {
  readonly data: unknown;
  readonly path: string;
  readonly fhirNodeDataType: string;
}

/**
 * The evaluator of an expression that only steps down member names from its resource type
 * (`Patient.identifier`, `Claim.item.productOrService`), or undefined for any other expression.
 * Most search parameters are such paths; walking the JSON directly gives what fhirpath.js gives
 * (the values under the path, arrays flattened, each with the model's data type of the last step)
 * at a fraction of its cost, which matters because every write extracts every parameter present.
 * A step into a choice (`value[x]`), a content reference or a resource falls back to the engine,
 * and so does a resource of another type than the path names. `fallback` is the engine's evaluator.
 * R4 only (the other versions' parameters are evaluated by the engine).
 */
export function compileSimplePath(
  model: Model,
  expression: string,
  fallback: (resource: unknown) => unknown[],
): ((resource: unknown) => unknown[]) | undefined {
  // Held to the engine on every R4 example and Synthea record (simple-paths.spec); the STU3 and
  // DSTU2 models type some paths differently from their nodes, so those stay with the engine.
  if ((model as unknown as { version?: string }).version !== 'r4') return undefined;
  const match = MEMBER_PATH.exec(expression);
  if (!match) return undefined;
  const type = match[1];
  const steps = match[2].slice(1).split('.');
  const { path2Type, choiceTypePaths, pathsDefinedElsewhere } = model as unknown as ModelTables;
  if (CONTENT_TYPED.has(type)) return undefined;
  let typePath = type;
  let dataType = type;
  for (const step of steps) {
    const path = `${typePath}.${step}`;
    if (choiceTypePaths[path] !== undefined || pathsDefinedElsewhere[path] !== undefined) return undefined;
    const stepType = path2Type[path];
    if (stepType === undefined || CONTENT_TYPED.has(stepType)) return undefined;
    dataType = stepType;
    typePath = stepType === 'BackboneElement' || stepType === 'Element' ? path : stepType;
  }
  const nodePath = `${type}.${steps.join('.')}`;
  return (resource) => {
    if (!isObject(resource) || resource.resourceType !== type) return fallback(resource);
    let current: unknown[] = [resource];
    for (const step of steps) {
      const next: unknown[] = [];
      for (const object of current) {
        if (!isObject(object)) continue;
        const value = object[step];
        if (Array.isArray(value)) {
          for (const item of value) if (item !== undefined && item !== null) next.push(item);
        } else if (value !== undefined && value !== null) next.push(value);
      }
      if (next.length === 0) return [];
      current = next;
    }
    return current.map((data): PathNode => ({ data, path: nodePath, fhirNodeDataType: dataType }));
  };
}

interface ModelTables {
  path2Type: Record<string, string | undefined>;
  choiceTypePaths: Record<string, unknown>;
  pathsDefinedElsewhere: Record<string, unknown>;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
