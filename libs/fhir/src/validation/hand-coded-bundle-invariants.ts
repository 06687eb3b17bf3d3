import type { HandCodedCheck } from './hand-coded-invariants';

type JsonObject = Record<string, unknown>;

/**
 * The Bundle invariants every transaction and batch envelope is judged on (bdl-3, bdl-4, bdl-5,
 * bdl-7, bdl-8), written by hand: through the fhirpath engine they cost ≈ 1.5 ms of CPU per
 * 20-entry bundle (each entry's resource becomes an engine node), as much as validating the
 * entries' resources themselves. R4 texts (bdl-5 and bdl-8 read the same in STU3); any other text
 * is evaluated by the engine. Shapes the published texts would judge in a less obvious way (a
 * primitive's `_name` extension, null, a non-string value) answer undefined: the engine decides.
 * hand-coded-invariants.spec.ts evaluates both on the same cases.
 */
export const HAND_CODED_BUNDLE: Readonly<
  Record<string, { expressions: readonly string[]; check: HandCodedCheck }>
> = {
  'bdl-3': {
    expressions: [
      "entry.all(request.exists() = (%resource.type = 'batch' or %resource.type = 'transaction' or %resource.type = 'history'))",
    ],
    check: (node, scope) => entriesAll(node, scope.resource, 'request', ['batch', 'transaction', 'history']),
  },
  'bdl-4': {
    expressions: [
      "entry.all(response.exists() = (%resource.type = 'batch-response' or %resource.type = 'transaction-response' or %resource.type = 'history'))",
    ],
    check: (node, scope) =>
      entriesAll(node, scope.resource, 'response', ['batch-response', 'transaction-response', 'history']),
  },
  'bdl-5': {
    expressions: ['resource.exists() or request.exists() or response.exists()'],
    check: (node) => {
      const entry = plainEntry(node);
      if (!entry) return undefined;
      return entry.resource !== undefined || entry.request !== undefined || entry.response !== undefined;
    },
  },
  'bdl-7': {
    expressions: [
      "(type = 'history') or entry.where(fullUrl.exists()).select(fullUrl&resource.meta.versionId).isDistinct()",
    ],
    check: (node) => {
      const bundle = node as JsonObject;
      const type = bundleType(bundle);
      if (type === null) return undefined;
      if (type === 'history') return true;
      const entries = entriesOf(bundle);
      if (!entries) return undefined;
      const seen = new Set<string>();
      for (const entry of entries) {
        if (entry.fullUrl === undefined) continue;
        if (typeof entry.fullUrl !== 'string') return undefined;
        const versionId = versionIdOf(entry.resource);
        if (versionId === null) return undefined;
        // `&` concatenates, an empty side counting as ''.
        const key = entry.fullUrl + versionId;
        if (seen.has(key)) return false;
        seen.add(key);
      }
      return true;
    },
  },
  'bdl-8': {
    // Evaluated as corrected (expression-corrections.ts): an entry without fullUrl holds.
    expressions: ["fullUrl.contains('/_history/').not()"],
    check: (node) => {
      const entry = plainEntry(node);
      if (!entry) return undefined;
      if (entry.fullUrl === undefined) return true;
      return typeof entry.fullUrl === 'string' ? !entry.fullUrl.includes('/_history/') : undefined;
    },
  },
};

function asObject(value: unknown): JsonObject | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as JsonObject)
    : undefined;
}

/** An entry whose elements are all plain (no `_name` extension sibling, no null): else undefined. */
function plainEntry(value: unknown): JsonObject | undefined {
  const entry = asObject(value);
  if (!entry) return undefined;
  for (const key in entry) if (key.charCodeAt(0) === 0x5f || entry[key] === null) return undefined;
  return entry;
}

/** The bundle's entries when every one is plain ([] without entries), else undefined. */
function entriesOf(bundle: JsonObject): JsonObject[] | undefined {
  if (bundle.entry === undefined) return [];
  if (!Array.isArray(bundle.entry)) return undefined;
  const entries: JsonObject[] = [];
  for (const item of bundle.entry as unknown[]) {
    const entry = plainEntry(item);
    if (!entry) return undefined;
    entries.push(entry);
  }
  return entries;
}

/** `type` as a string, undefined when absent, null when the engine must judge it. */
function bundleType(bundle: JsonObject): string | undefined | null {
  if (bundle._type !== undefined) return null;
  if (bundle.type === undefined || typeof bundle.type === 'string') return bundle.type;
  return null;
}

/** `entry.all(<element>.exists() = (%resource.type in types))`. */
function entriesAll(
  node: unknown,
  resource: JsonObject,
  element: 'request' | 'response',
  types: readonly string[],
): boolean | undefined {
  // An absent type makes the comparison empty, which `all` counts as false: the engine judges it.
  const type = bundleType(resource);
  if (typeof type !== 'string') return undefined;
  const entries = entriesOf(node as JsonObject);
  if (!entries) return undefined;
  const wanted = types.includes(type);
  return entries.every((entry) => (entry[element] !== undefined) === wanted);
}

/** `resource.meta.versionId` as `&` sees it ('' when absent), or null when the engine must judge it. */
function versionIdOf(resource: unknown): string | null {
  if (resource === undefined) return '';
  const object = asObject(resource);
  if (!object) return null;
  if (object.meta === undefined) return '';
  const meta = asObject(object.meta);
  if (!meta || meta._versionId !== undefined) return null;
  if (meta.versionId === undefined) return '';
  return typeof meta.versionId === 'string' ? meta.versionId : null;
}
