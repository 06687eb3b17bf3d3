import { isResourceType } from '../definitions/resource-types';
import { isCalendarDate } from './primitive-formats';
import { MAX_DEPTH } from './structural-validator';
import { errorIssue, type ValidationIssue } from './validation-issue';

/**
 * DSTU2 has no StructureDefinition package here, so its validation is lighter: a known resourceType,
 * a valid `id`, well-formed JSON (https://hl7.org/fhir/DSTU2/json.html: no nulls outside `_x` arrays, no
 * empty strings, arrays or objects), meta.versionId (id) and meta.lastUpdated (instant) formats, and the
 * same rules for resources nested in `contained` and `Bundle.entry.resource`.
 */
const ID = /^[A-Za-z0-9\-.]{1,64}$/;
/** instant, https://hl7.org/fhir/DSTU2/datatypes.html#instant */
const INSTANT =
  /^-?[0-9]{4}-(0[1-9]|1[0-2])-(0[0-9]|[1-2][0-9]|3[0-1])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]+)?(Z|(\+|-)((0[0-9]|1[0-3]):[0-5][0-9]|14:00))$/;

type JsonObject = Record<string, unknown>;

/** Nesting guard, as in the structural validator: a crafted body must not exhaust the stack. */
let depth = 0;

function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function validateDstu2Resource(
  resource: unknown,
  issues: ValidationIssue[],
  path?: string,
  expectedType?: string,
): void {
  const where = path ?? expectedType ?? 'Resource';
  if (!isJsonObject(resource)) {
    issues.push(errorIssue('structure', where, 'A resource must be a JSON object'));
    return;
  }
  const type = resource.resourceType;
  if (typeof type !== 'string') {
    const missing = type === undefined;
    issues.push(
      errorIssue(
        missing ? 'required' : 'structure',
        `${where}.resourceType`,
        'resourceType must be a string',
      ),
    );
    return;
  }
  if (!isResourceType('dstu2', type)) {
    issues.push(errorIssue('not-found', `${where}.resourceType`, `Unknown resource type '${type}' in dstu2`));
    return;
  }
  if (expectedType !== undefined && type !== expectedType) {
    issues.push(
      errorIssue(
        'invalid',
        `${where}.resourceType`,
        `Expected resource type '${expectedType}', found '${type}'`,
      ),
    );
  }
  const root = path ?? type;
  checkResourceFields(resource, root, issues);
  checkJsonShape(resource, root, issues, true);
}

function checkResourceFields(resource: JsonObject, root: string, issues: ValidationIssue[]): void {
  checkFormat(resource.id, ID, 'id', `${root}.id`, issues);
  const meta = resource.meta;
  if (meta === undefined) return;
  if (!isJsonObject(meta)) {
    issues.push(errorIssue('structure', `${root}.meta`, 'meta must be an object'));
    return;
  }
  checkFormat(meta.versionId, ID, 'id', `${root}.meta.versionId`, issues);
  checkFormat(meta.lastUpdated, INSTANT, 'instant', `${root}.meta.lastUpdated`, issues);
}

function checkFormat(
  value: unknown,
  format: RegExp,
  typeName: string,
  path: string,
  issues: ValidationIssue[],
): void {
  if (value === undefined || value === null || value === '') return; // reported by the shape check
  if (typeof value !== 'string') {
    issues.push(errorIssue('structure', path, `Expected a string (${typeName})`));
  } else if (typeName === 'id' && value.length > 64) {
    issues.push(errorIssue('too-long', path, 'An id is at most 64 characters long'));
  } else if (!format.test(value) || (typeName === 'instant' && !isCalendarDate(value))) {
    issues.push(errorIssue('value', path, `${JSON.stringify(value)} is not a valid ${typeName}`));
  }
}

/** Walks the JSON; nested resources (contained, Bundle.entry.resource …) are checked as resources. */
function checkJsonShape(
  object: JsonObject,
  path: string,
  issues: ValidationIssue[],
  isResource: boolean,
): void {
  if (depth >= MAX_DEPTH) {
    issues.push(errorIssue('structure', path, `Elements are nested more than ${MAX_DEPTH} levels deep`));
    return;
  }
  depth++;
  try {
    checkProperties(object, path, issues, isResource);
  } finally {
    depth--;
  }
}

function checkProperties(
  object: JsonObject,
  path: string,
  issues: ValidationIssue[],
  isResource: boolean,
): void {
  let present = 0;
  for (const key in object) {
    const value = object[key];
    if (value === undefined) continue;
    present++;
    const childPath = `${path}.${key}`;
    if (key === 'resourceType' && isResource) continue;
    if (value === null) {
      issues.push(errorIssue('structure', childPath, 'null is not allowed; omit the element instead'));
    } else if (Array.isArray(value)) {
      const nullsAllowed = key.startsWith('_') || Array.isArray(object[`_${key}`]);
      checkArray(value, childPath, nullsAllowed, issues, key === 'contained');
    } else if (isJsonObject(value)) {
      if (key === 'resource' || typeof value.resourceType === 'string') {
        validateDstu2Resource(value, issues, childPath);
      } else {
        checkJsonShape(value, childPath, issues, false);
      }
    } else if (value === '') {
      issues.push(errorIssue('value', childPath, 'Empty strings are not allowed; omit the element instead'));
    }
  }
  if (present === 0)
    issues.push(errorIssue('structure', path, 'Empty objects are not allowed; omit the element instead'));
}

function checkArray(
  items: readonly unknown[],
  path: string,
  nullsAllowed: boolean,
  issues: ValidationIssue[],
  holdsResources: boolean,
): void {
  if (items.length === 0) {
    issues.push(errorIssue('structure', path, 'Empty arrays are not allowed; omit the element instead'));
    return;
  }
  for (let i = 0; i < items.length; i++) {
    const item = items[i];
    const itemPath = `${path}[${i}]`;
    if (item === null) {
      // Nulls align `_x` extension arrays with their value arrays (and vice versa).
      if (!nullsAllowed) issues.push(errorIssue('structure', itemPath, 'null is not allowed here'));
    } else if (Array.isArray(item)) {
      issues.push(errorIssue('structure', itemPath, 'Arrays of arrays are not valid FHIR JSON'));
    } else if (isJsonObject(item)) {
      if (holdsResources) validateDstu2Resource(item, issues, itemPath);
      else checkJsonShape(item, itemPath, issues, false);
    } else if (item === '') {
      issues.push(errorIssue('value', itemPath, 'Empty strings are not allowed; omit the element instead'));
    }
  }
}
