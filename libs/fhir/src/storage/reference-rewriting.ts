/**
 * `urn:uuid:` placeholder replacement inside a posted Bundle (docs/api.md §5,
 * https://hl7.org/fhir/R4/bundle.html#references): every occurrence of a placeholder, at any depth
 * (nested elements, extensions, contained resources), is replaced by the final `Type/id`.
 */

const URN_UUID = /^urn:uuid:[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
const URN_OID = /^urn:oid:[0-2](\.(0|[1-9]\d*))+$/;

/** True for a `urn:uuid:` or `urn:oid:` fullUrl, i.e. a placeholder the server resolves. */
export function isPlaceholder(value: string): boolean {
  return URN_UUID.test(value) || URN_OID.test(value);
}

/**
 * Returns a copy of `value` with every string equal to a key of `replacements` replaced (the
 * placeholder is the whole value of a `reference`, `valueReference.reference`, `valueUri`, …), and
 * `placeholder/_history/n` suffixes kept. Values without a placeholder are shared, not copied.
 */
export function rewritePlaceholders<T>(value: T, replacements: ReadonlyMap<string, string>): T {
  if (replacements.size === 0) return value;
  return rewrite(value, replacements) as T;
}

function rewrite(value: unknown, replacements: ReadonlyMap<string, string>): unknown {
  if (typeof value === 'string') return rewriteString(value, replacements);
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const next = rewrite(value[i], replacements);
      if (next !== value[i]) {
        copy ??= value.slice();
        copy[i] = next;
      }
    }
    return copy ?? value;
  }
  if (value !== null && typeof value === 'object') {
    let copy: Record<string, unknown> | undefined;
    for (const [key, child] of Object.entries(value as Record<string, unknown>)) {
      const next = rewrite(child, replacements);
      if (next !== child) {
        copy ??= { ...(value as Record<string, unknown>) };
        copy[key] = next;
      }
    }
    return copy ?? value;
  }
  return value;
}

function rewriteString(value: string, replacements: ReadonlyMap<string, string>): string {
  if (!value.startsWith('urn:')) return value;
  const direct = replacements.get(value);
  if (direct !== undefined) return direct;
  const history = value.indexOf('/_history/');
  if (history > 0) {
    const base = replacements.get(value.slice(0, history));
    if (base !== undefined) return base + value.slice(history);
  }
  return value;
}
