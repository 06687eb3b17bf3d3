import { applyPatch, JsonPatchError, validate, type Operation } from 'fast-json-patch';
import { elementTables } from '../definitions/element-tables';
import type { FhirVersion } from '../definitions/fhir-version';
import { OperationOutcomeError } from '../outcome/operation-outcome';
import type { Selection } from './fhirpath-sandbox';

/**
 * The two PATCH formats of https://hl7.org/fhir/R4/http.html#patch: JSON Patch (RFC 6902, with the
 * fast-json-patch library) and FHIRPath Patch (https://hl7.org/fhir/R4/fhirpatch.html, a
 * `Parameters` resource). Both work on a copy and return the patched resource; the caller
 * validates it. A malformed patch document is 400; one that cannot be applied to this resource 422.
 */

type Json = Record<string, unknown>;

/**
 * Property names that reach an object's prototype rather than the resource: no FHIR element has
 * them, and a patch naming one is refused before anything is applied.
 */
const BANNED_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

const unprocessable = (message: string) => new OperationOutcomeError('processing', message, { status: 422 });

export function applyJsonPatch(resource: Json, patch: unknown): Json {
  if (!Array.isArray(patch)) {
    throw OperationOutcomeError.invalid('a JSON Patch document is an array of operations (RFC 6902)');
  }
  const operations = patch as Operation[];
  const problem = validate(operations);
  if (problem) throw OperationOutcomeError.invalid(`JSON Patch: ${problem.message}`);
  operations.forEach((operation, i) => {
    for (const pointer of [operation.path, (operation as { from?: unknown }).from]) {
      const banned =
        typeof pointer === 'string' ? pointer.split('/').find((s) => BANNED_KEYS.has(s)) : undefined;
      if (banned !== undefined) {
        throw OperationOutcomeError.invalid(
          `JSON Patch operation ${i}: "${banned}" is no FHIR element and may not appear in a path`,
        );
      }
    }
  });
  try {
    return applyPatch(structuredClone(resource), operations, true, false).newDocument;
  } catch (error) {
    if (error instanceof JsonPatchError) {
      throw unprocessable(`JSON Patch operation ${String(error.index)} cannot be applied: ${error.name}`);
    }
    throw error;
  }
}

// ---- FHIRPath Patch ---------------------------------------------------------------------------

interface PatchOperation {
  type: 'add' | 'insert' | 'delete' | 'replace' | 'move';
  path: string;
  name?: string;
  value?: unknown;
  index?: number;
  source?: number;
  destination?: number;
}

/** Where an element sits: `parent[key]`, or `parent[key][index]` in a list. */
interface Location {
  parent: Json;
  key: string;
  index?: number;
}

const TYPES = new Set(['add', 'insert', 'delete', 'replace', 'move']);
/** https://hl7.org/fhir/R4/elementdefinition.html#path: an element name (not a prototype key). */
const ELEMENT_NAME = /^(?!(?:__proto__|constructor|prototype)$)[A-Za-z][A-Za-z0-9_]{0,63}$/;

/** A part's name; one that would reach a prototype → 400. */
function partName(part: Json): string {
  const name = String(part.name);
  if (BANNED_KEYS.has(name)) throw OperationOutcomeError.invalid(`"${name}" is no FHIR element name`);
  return name;
}

function partValue(part: Json): unknown {
  const valueKey = Object.keys(part).find((k) => k.startsWith('value'));
  if (valueKey) return part[valueKey];
  if (Array.isArray(part.part)) {
    // an anonymous (backbone) value: its parts are its elements
    const out: Json = {};
    for (const sub of part.part as Json[]) {
      const value = partValue(sub);
      const name = partName(sub);
      if (out[name] === undefined) out[name] = value;
      else out[name] = [...(Array.isArray(out[name]) ? (out[name] as unknown[]) : [out[name]]), value];
    }
    return out;
  }
  if (part.resource !== undefined) return part.resource;
  return undefined;
}

/** The operations of a FHIRPath Patch `Parameters` resource; 400 for a malformed one. */
export function readFhirPathPatch(parameters: Json): PatchOperation[] {
  if (parameters.resourceType !== 'Parameters' || !Array.isArray(parameters.parameter)) {
    throw OperationOutcomeError.invalid(
      'a FHIRPath Patch is a Parameters resource with operation parameters',
    );
  }
  return (parameters.parameter as Json[]).map((param, i) => {
    if (param.name !== 'operation' || !Array.isArray(param.part)) {
      throw OperationOutcomeError.invalid(`Parameters.parameter[${i}] is not an operation`);
    }
    const op: Json = {};
    for (const part of param.part as Json[]) op[partName(part)] = partValue(part);
    if (!TYPES.has(String(op.type)) || typeof op.path !== 'string') {
      throw OperationOutcomeError.invalid(
        `operation ${i}: type must be add, insert, delete, replace or move, with a path`,
      );
    }
    if (op.type === 'add' && (typeof op.name !== 'string' || !ELEMENT_NAME.test(op.name)))
      throw OperationOutcomeError.invalid(`operation ${i}: add needs the name of an element`);
    if ((op.type === 'add' || op.type === 'insert' || op.type === 'replace') && op.value === undefined)
      throw OperationOutcomeError.invalid(`operation ${i}: ${String(op.type)} needs a value`);
    if (op.type === 'insert' && typeof op.index !== 'number')
      throw OperationOutcomeError.invalid(`operation ${i}: insert needs an index`);
    if (op.type === 'move' && (typeof op.source !== 'number' || typeof op.destination !== 'number'))
      throw OperationOutcomeError.invalid(`operation ${i}: move needs source and destination`);
    return op as unknown as PatchOperation;
  });
}

/** A selected object of the resource and its key path from the root. */
interface Selected {
  node: Json;
  path: string[];
}

/**
 * Evaluates a caller's FHIRPath on a resource (bounded, off the event loop: FhirPathSandbox) and
 * answers the key paths of the objects it selected, null for anything else.
 */
export type FhirPathSelect = (version: FhirVersion, resource: Json, expression: string) => Promise<Selection>;

/** The selected objects of `resource` (other items — primitives, computed values — as null). */
async function run(select: FhirPathSelect, version: FhirVersion, resource: Json, path: string) {
  const paths = await select(version, resource, path);
  return paths.map((keys): Selected | null => {
    if (keys === null) return null;
    let node: unknown = resource;
    for (const key of keys)
      node = node === null || typeof node !== 'object' ? undefined : (node as Json)[key];
    return node !== null && typeof node === 'object' ? { node: node as Json, path: keys } : null;
  });
}

const objects = (selected: Array<Selected | null>): Selected[] => selected.filter((s) => s !== null);

function locationOf(root: Json, path: string[]): Location | undefined {
  if (path.length === 0) return undefined;
  let parent: unknown = root;
  for (const key of path.slice(0, -1)) parent = (parent as Json)[key];
  const last = path[path.length - 1];
  if (Array.isArray(parent)) {
    const listPath = path.slice(0, -1);
    let owner: unknown = root;
    for (const key of listPath.slice(0, -1)) owner = (owner as Json)[key];
    return { parent: owner as Json, key: listPath[listPath.length - 1], index: Number(last) };
  }
  return { parent: parent as Json, key: last };
}

/**
 * The elements a path selects. A path ending in `.name` (or `.name[n]`) is located through its
 * parent, so that primitives (which FHIRPath returns as copies) can be changed too; anything else
 * must select objects of the resource.
 */
async function locate(select: FhirPathSelect, version: FhirVersion, resource: Json, path: string) {
  const tail = /^(.+)\.([A-Za-z][A-Za-z0-9]*)(?:\[(\d+)\])?$/.exec(path);
  if (tail) {
    const [, parentPath, name, index] = tail;
    const parents = objects(await run(select, version, resource, parentPath));
    return parents.flatMap(({ node: parent }): Location[] => {
      const value = parent[name];
      if (value === undefined) return [];
      if (!Array.isArray(value)) return index === undefined ? [{ parent, key: name }] : [];
      const indexes = index === undefined ? value.map((_, i) => i) : [Number(index)];
      return indexes.filter((i) => i < value.length).map((i) => ({ parent, key: name, index: i }));
    });
  }
  return (await run(select, version, resource, path)).map((target) => {
    const location = target ? locationOf(resource, target.path) : undefined;
    if (!location) throw unprocessable(`the path ${path} does not select elements of the resource`);
    return location;
  });
}

function one(locations: Location[], op: PatchOperation): Location {
  if (locations.length !== 1) {
    throw unprocessable(`${op.type} at ${op.path}: the path selects ${locations.length} elements, not one`);
  }
  return locations[0];
}

/** True when the element `name` of the object at `path` (keys from the root) is a list. */
function isListElement(version: FhirVersion, resource: Json, containerPath: string[], name: string): boolean {
  const tables = elementTables(version);
  let table = tables.table(String(resource.resourceType));
  for (const key of containerPath) {
    if (/^\d+$/.test(key)) continue;
    const rule = table?.elements.get(key);
    table = rule ? tables.table(rule.tableKey) : undefined;
  }
  return table?.elements.get(name)?.isArray ?? false;
}

/** The list a path ending in `.name` names (insert, move), through its one parent. */
async function listAt(select: FhirPathSelect, version: FhirVersion, resource: Json, op: PatchOperation) {
  const tail = /^(.+)\.([A-Za-z][A-Za-z0-9]*)$/.exec(op.path);
  const parents = tail ? objects(await run(select, version, resource, tail[1])) : [];
  const list = parents.length === 1 ? parents[0].node[tail![2]] : undefined;
  if (!Array.isArray(list)) throw unprocessable(`${op.type} at ${op.path}: the path must name one list`);
  return list as unknown[];
}

/**
 * Applies a FHIRPath Patch on a copy of `resource`. Every caller expression goes through `select`
 * (bounded in time, off the event loop), never through fhirpath.js on the calling thread.
 */
export async function applyFhirPathPatch(
  select: FhirPathSelect,
  version: FhirVersion,
  resource: Json,
  parameters: Json,
): Promise<Json> {
  const operations = readFhirPathPatch(parameters);
  const out = structuredClone(resource);
  for (const op of operations) {
    switch (op.type) {
      case 'add': {
        const containers = objects(await run(select, version, out, op.path));
        if (containers.length !== 1)
          throw unprocessable(`add at ${op.path}: ${containers.length} containers`);
        const { node: container, path } = containers[0];
        const name = op.name!;
        const existing = container[name];
        if (Array.isArray(existing)) existing.push(op.value);
        else if (existing !== undefined) throw unprocessable(`add at ${op.path}: ${name} is already present`);
        else container[name] = isListElement(version, out, path, name) ? [op.value] : op.value;
        break;
      }
      case 'insert': {
        const list = await listAt(select, version, out, op);
        if (op.index! < 0 || op.index! > list.length) throw unprocessable(`insert at ${op.path}: bad index`);
        list.splice(op.index!, 0, op.value);
        break;
      }
      case 'replace': {
        const at = one(await locate(select, version, out, op.path), op);
        if (at.index !== undefined) (at.parent[at.key] as unknown[])[at.index] = op.value;
        else at.parent[at.key] = op.value;
        break;
      }
      case 'delete': {
        const found = await locate(select, version, out, op.path);
        if (found.length === 0) break; // fhirpatch.html: deleting nothing is not an error
        const at = one(found, op);
        if (at.index === undefined) delete at.parent[at.key];
        else {
          const list = at.parent[at.key] as unknown[];
          list.splice(at.index, 1);
          if (list.length === 0) delete at.parent[at.key]; // no empty arrays in FHIR JSON
        }
        break;
      }
      case 'move': {
        const list = await listAt(select, version, out, op);
        const { source, destination } = op as Required<PatchOperation>;
        if (source < 0 || source >= list.length || destination < 0 || destination >= list.length)
          throw unprocessable(`move at ${op.path}: bad source or destination`);
        const [item] = list.splice(source, 1);
        list.splice(destination, 0, item);
        break;
      }
    }
  }
  return out;
}
