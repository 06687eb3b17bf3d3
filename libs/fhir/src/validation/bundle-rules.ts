import { errorIssue, type ValidationIssue } from './validation-issue';

type JsonObject = Record<string, unknown>;

/** Link relations that name one page each (https://hl7.org/fhir/R4/bundle.html#searchset-paging). */
const SINGLE_LINKS = new Set(['self', 'first', 'previous', 'prev', 'next', 'last']);
/** Bundle types whose entries are identified by request.url rather than fullUrl. */
const NO_FULL_URL_NEEDED = new Set(['transaction', 'batch']);
const ABSOLUTE = /^[A-Za-z][A-Za-z0-9+.-]*:/;
/** `…/Type/id` (optionally `/_history/v`) at the end of a RESTful fullUrl. */
const RESTFUL =
  /^https?:\/\/.+\/([A-Z][A-Za-z]+)\/([A-Za-z0-9\-.]{1,64})(?:\/_history\/[A-Za-z0-9\-.]{1,64})?$/;

/**
 * Bundle rules that are not written as FHIRPath invariants (https://hl7.org/fhir/R4/bundle.html#bundle-unique):
 * a fullUrl is absolute (a URL or a `urn:`), and a RESTful one ends with the resource's type and id;
 * entries carry a fullUrl except in transactions and batches; paging links occur at most once each.
 * bdl-1 … bdl-12 themselves run as invariants.
 */
export function checkBundle(bundle: JsonObject, path: string, issues: ValidationIssue[]): void {
  const type = typeof bundle.type === 'string' ? bundle.type : undefined;
  if (Array.isArray(bundle.link)) {
    const seen = new Set<string>();
    bundle.link.forEach((link: unknown, i) => {
      const relation = (link as JsonObject | null)?.relation;
      if (typeof relation !== 'string' || !SINGLE_LINKS.has(relation)) return;
      if (seen.has(relation))
        issues.push(
          errorIssue(
            'invalid',
            `${path}.link[${i}].relation`,
            `The link relation '${relation}' can only occur once`,
          ),
        );
      seen.add(relation);
    });
  }
  if (!Array.isArray(bundle.entry)) return;
  bundle.entry.forEach((entry: unknown, i) => {
    if (typeof entry !== 'object' || entry === null) return;
    const { fullUrl, resource } = entry as JsonObject;
    const where = `${path}.entry[${i}]`;
    if (fullUrl === undefined) {
      if (resource !== undefined && type !== undefined && !NO_FULL_URL_NEEDED.has(type))
        issues.push(
          errorIssue(
            'required',
            `${where}.fullUrl`,
            'Except in transactions and batches, an entry needs a fullUrl',
          ),
        );
      return;
    }
    if (typeof fullUrl !== 'string') return; // a type problem, reported by the walker
    if (!ABSOLUTE.test(fullUrl)) {
      issues.push(
        errorIssue(
          'invalid',
          `${where}.fullUrl`,
          `The fullUrl must be an absolute URL or a urn (not '${fullUrl}')`,
        ),
      );
      return;
    }
    const restful = RESTFUL.exec(fullUrl);
    const r = resource as JsonObject | undefined;
    if (!restful || typeof r?.resourceType !== 'string' || typeof r.id !== 'string') return;
    if (restful[1] !== r.resourceType || restful[2] !== r.id)
      issues.push(
        errorIssue(
          'invalid',
          `${where}.fullUrl`,
          `The fullUrl '${fullUrl}' looks like a RESTful URL, so it must end with the resource's type and id (${r.resourceType}/${r.id})`,
        ),
      );
  });
}
