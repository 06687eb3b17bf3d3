import type { DefinedFhirVersion } from '../definitions/fhir-version';
import { HAND_CODED_BUNDLE } from './hand-coded-bundle-invariants';

type JsonObject = Record<string, unknown>;

/** What `%resource` and `%rootResource` are for one element (https://hl7.org/fhir/R4/fhirpath.html#variables). */
export interface InvariantScope {
  /** The resource the element is in (a contained resource for elements inside it). */
  readonly resource: JsonObject;
  /** The resource that holds it all: the container of a contained resource, else `resource`. */
  readonly rootResource: JsonObject;
  /** ids of `rootResource.contained`, filled on first need (ref-1). */
  containedIds?: ReadonlySet<string>;
  /** Engine time spent on the top-level resource (shared by its nested resources). */
  budget?: { spentMs: number; skipped: number };
}

export type InvariantCheck = (node: unknown, scope: InvariantScope) => boolean;
/** A hand-coded check may answer undefined: "ask the fhirpath engine" (uncommon value shapes). */
export type HandCodedCheck = (node: unknown, scope: InvariantScope) => boolean | undefined;

/**
 * Invariants that run on almost every resource, written by hand because the fhirpath engine needs
 * 5–50 µs per evaluation. Each entry lists the exact published expressions it implements (R4, STU3);
 * any other text falls back to the engine. hand-coded-invariants.spec.ts evaluates both on the same
 * cases to keep the semantics equal.
 */
export const HAND_CODED: Readonly<Record<string, { expressions: readonly string[]; check: HandCodedCheck }>> =
  {
    'ref-1': {
      expressions: [
        "reference.startsWith('#').not() or (reference.substring(1).trace('url') in %rootResource.contained.id.trace('ids'))",
        "reference.startsWith('#').not() or (reference.substring(1).trace('url') in %resource.contained.id.trace('ids'))",
      ],
      check: (node, scope) => {
        const reference = (node as JsonObject).reference;
        // '#' alone points at the container: substring(1) is empty, so the expression is empty (holds).
        if (typeof reference !== 'string' || !reference.startsWith('#') || reference === '#') return true;
        scope.containedIds ??= containedIds(scope.rootResource);
        return scope.containedIds.has(reference.slice(1));
      },
    },
    'per-1': {
      expressions: [
        'start.hasValue().not() or end.hasValue().not() or (start <= end)',
        'start.empty() or end.empty() or (start <= end)',
      ],
      check: (node) => {
        const { start, end } = node as JsonObject;
        if (typeof start !== 'string' || typeof end !== 'string') return true;
        const order = compareDateTimes(start, end);
        // An undefined order (a date and a dateTime of the same day) makes the expression empty: fails.
        return order === 'unknown' ? undefined : order === -1 || order === 0;
      },
    },
    'dom-2': {
      expressions: ['contained.contained.empty()'],
      check: (node) => containedOf(node).every((c) => c.contained === undefined),
    },
    'dom-4': {
      expressions: ['contained.meta.versionId.empty() and contained.meta.lastUpdated.empty()'],
      check: (node) =>
        containedOf(node).every((c) => {
          const meta = asObject(c.meta);
          return !meta || (!present(meta, 'versionId') && !present(meta, 'lastUpdated'));
        }),
    },
    'dom-5': {
      expressions: ['contained.meta.security.empty()'],
      check: (node) => containedOf(node).every((c) => asObject(c.meta)?.security === undefined),
    },
    'dom-3': {
      expressions: [
        "contained.where((('#'+id in (%resource.descendants().reference | %resource.descendants().as(canonical) | %resource.descendants().as(uri) | %resource.descendants().as(url))) or descendants().where(reference = '#').exists() or descendants().where(as(canonical) = '#').exists() or descendants().where(as(canonical) = '#').exists()).not()).trace('unmatched', id).empty()",
        "contained.where(('#'+id in %resource.descendants().reference).not()).empty()",
      ],
      check: (node) => unreferencedContained(node as JsonObject).length === 0,
    },
    'ext-1': {
      expressions: ['extension.exists() != value.exists()'],
      check: (node) => {
        const object = node as JsonObject;
        return present(object, 'extension') !== hasChoice(object, 'value');
      },
    },
    'obs-6': {
      expressions: ['dataAbsentReason.empty() or value.empty()'],
      check: (node) =>
        !present(node as JsonObject, 'dataAbsentReason') || !hasChoice(node as JsonObject, 'value'),
    },
    'obs-7': {
      expressions: [
        'value.empty() or component.code.where(coding.intersect(%resource.code.coding).exists()).empty()',
      ],
      check: (node, scope) => {
        const observation = node as JsonObject;
        if (!hasChoice(observation, 'value') || !Array.isArray(observation.component)) return true;
        const codings = arrayOf(asObject(scope.resource.code)?.coding);
        if (codings.length === 0) return true;
        for (const component of observation.component as unknown[]) {
          for (const coding of arrayOf(asObject(asObject(component)?.code)?.coding))
            if (codings.some((c) => deepEqual(c, coding))) return false;
        }
        return true;
      },
    },
    'que-7': {
      // fhirpath.js answers `answerBoolean is Boolean` with false (FHIR boolean vs System.Boolean); the
      // reference and the spec's intent: an `exists` condition carries a boolean answer.
      expressions: ["operator = 'exists' implies (answer is Boolean)"],
      check: (node) => {
        const object = node as JsonObject;
        return (
          object.operator !== 'exists' || present(object, 'answerBoolean') || !hasChoice(object, 'answer')
        );
      },
    },
    'qty-3': {
      expressions: ['code.empty() or system.exists()'],
      check: (node) => !present(node as JsonObject, 'code') || present(node as JsonObject, 'system'),
    },
    'cpt-2': {
      expressions: ['value.empty() or system.exists()'],
      check: (node) => !present(node as JsonObject, 'value') || present(node as JsonObject, 'system'),
    },
    'att-1': {
      expressions: ['data.empty() or contentType.exists()'],
      check: (node) => !present(node as JsonObject, 'data') || present(node as JsonObject, 'contentType'),
    },
    ...HAND_CODED_BUNDLE,
  };

/**
 * Constraints not evaluated by the engine, with the reason; docs/validation.md lists them too.
 * `ele-1` (a value or children) is enforced by the walker's empty-element rule.
 */
export const NOT_EVALUATED: Readonly<Record<DefinedFhirVersion, Readonly<Record<string, string>>>> = {
  r4: {
    'txt-1': 'htmlChecks(): the narrative rules are checked by narrative.ts',
    'txt-2': 'htmlChecks(): the narrative rules are checked by narrative.ts',
    'ctm-1': 'needs resolve() of CareTeam.participant.member to a Practitioner resource',
  },
  stu3: {
    'txt-1': 'htmlChecks(): the narrative rules are checked by narrative.ts',
    'txt-2': 'htmlChecks(): the narrative rules are checked by narrative.ts',
    'ctm-1': 'needs resolve() of CareTeam.participant.member',
    'cmr-1': 'needs resolve() of CommunicationRequest.requester.agent',
    'mps-1': 'needs resolve() of MedicationRequest.requester.agent',
    'rfr-1': 'needs resolve() of ReferralRequest.requester.agent',
  },
};

function asObject(value: unknown): JsonObject | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as JsonObject)
    : undefined;
}

function arrayOf(value: unknown): unknown[] {
  return Array.isArray(value) ? value : value === undefined ? [] : [value];
}

/** FHIRPath `exists()` of a child: its value or, for a primitive, its `_name` extension sibling. */
function present(object: JsonObject, name: string): boolean {
  return object[name] !== undefined || object[`_${name}`] !== undefined;
}

/** Any typed JSON name of a choice element, e.g. `valueQuantity` for `value`. */
export function hasChoice(object: JsonObject, stem: string): boolean {
  for (const key in object) {
    const at = key.charCodeAt(0) === 0x5f ? 1 : 0;
    if (key.length > stem.length + at && key.startsWith(stem, at)) {
      const next = key.charCodeAt(stem.length + at);
      if (next >= 0x41 && next <= 0x5a && object[key] !== undefined) return true;
    }
  }
  return false;
}

function containedOf(node: unknown): JsonObject[] {
  const contained = (node as JsonObject).contained;
  if (!Array.isArray(contained)) return [];
  const out: JsonObject[] = [];
  for (const c of contained as unknown[]) {
    const object = asObject(c);
    if (object) out.push(object);
  }
  return out;
}

function containedIds(resource: JsonObject): Set<string> {
  const ids = new Set<string>();
  for (const c of containedOf(resource)) if (typeof c.id === 'string') ids.add(c.id);
  return ids;
}

/**
 * dom-3: contained resources that nothing in the resource points at with `#id` (a reference,
 * canonical, uri or url value), nor that point back at the container with `#`. Any string equal to
 * `#id` counts, which equals the typed test: only those types hold fragment references.
 */
export function unreferencedContained(resource: JsonObject): JsonObject[] {
  const contained = containedOf(resource);
  if (contained.length === 0) return [];
  const pointers = new Set<string>();
  collectFragments(resource, pointers, 0);
  return contained.filter((c) => {
    if (typeof c.id === 'string' && pointers.has(`#${c.id}`)) return false;
    const own = new Set<string>();
    collectFragments(c, own, 0);
    return !own.has('#');
  });
}

function collectFragments(value: unknown, into: Set<string>, depth: number): void {
  if (depth > 100) return;
  if (typeof value === 'string') {
    if (value.charCodeAt(0) === 0x23) into.add(value);
  } else if (Array.isArray(value)) {
    for (const item of value) collectFragments(item, into, depth + 1);
  } else if (typeof value === 'object' && value !== null) {
    for (const key in value) if (key !== 'div') collectFragments((value as JsonObject)[key], into, depth + 1);
  }
}

/** FHIRPath `=` on complex values: the same children with equal values (order of keys aside). */
function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a).filter((k) => (a as JsonObject)[k] !== undefined);
  const kb = Object.keys(b).filter((k) => (b as JsonObject)[k] !== undefined);
  if (ka.length !== kb.length) return false;
  return ka.every((k) => deepEqual((a as JsonObject)[k], (b as JsonObject)[k]));
}

const FULL_DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

/**
 * FHIRPath comparison of two date/dateTime strings: -1, 0, 1, undefined when the precisions differ so
 * that the answer is empty (an invariant comparing them then fails), or 'unknown' for shapes left to the engine
 * (a date against a dateTime, times without seconds). https://hl7.org/fhirpath/#comparison.
 */
export function compareDateTimes(a: string, b: string): -1 | 0 | 1 | undefined | 'unknown' {
  const fa = FULL_DATE_TIME.exec(a);
  const fb = FULL_DATE_TIME.exec(b);
  if (fa && fb) {
    // Fractions of different lengths: the engine's precision rules decide.
    if ((fa[7] ?? '').length !== (fb[7] ?? '').length) return 'unknown';
    const ta = Date.parse(a);
    const tb = Date.parse(b);
    if (Number.isNaN(ta) || Number.isNaN(tb)) return undefined;
    return ta < tb ? -1 : ta > tb ? 1 : 0;
  }
  const partial = /^\d{4}(-\d{2}(-\d{2})?)?$/;
  if (partial.test(a) && partial.test(b)) {
    // Same precision compares as text; differing precision decides only where the common part differs.
    const common = Math.min(a.length, b.length);
    const sa = a.slice(0, common);
    const sb = b.slice(0, common);
    if (sa !== sb) return sa < sb ? -1 : 1;
    return a.length === b.length ? 0 : undefined;
  }
  return 'unknown';
}
