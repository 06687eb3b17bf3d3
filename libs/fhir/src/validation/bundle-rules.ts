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
 * entries carry a fullUrl except in transactions and batches; paging links occur at most once each;
 * searchset entries are what their search mode says (checkSearchset). bdl-1 … bdl-12 themselves run
 * as invariants.
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
  if (type === 'searchset') checkSearchset(bundle, path, issues);
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

/**
 * The entries of a searchset (https://hl7.org/fhir/R4/bundle.html#searchset, search.html#return):
 * a `match` is a resource the search found, so it has an id and is of a type the search asked for
 * (the type of the `self` link's path, or its `_type`); an `outcome` is an OperationOutcome.
 */
function checkSearchset(bundle: JsonObject, path: string, issues: ValidationIssue[]): void {
  const searched = searchedTypes(bundle);
  (bundle.entry as unknown[]).forEach((entry, i) => {
    const { resource, search } = (entry ?? {}) as JsonObject;
    const mode = (search as JsonObject | undefined)?.mode;
    const r = resource as JsonObject | undefined;
    if (typeof r !== 'object' || r === null || typeof r.resourceType !== 'string') return;
    const where = `${path}.entry[${i}].resource`;
    if (mode === 'outcome' && r.resourceType !== 'OperationOutcome')
      issues.push(errorIssue('invalid', where, `This is not an OperationOutcome (${r.resourceType})`));
    if (mode !== 'match') return;
    if (r.id === undefined) issues.push(errorIssue('invalid', where, 'Search results must have ids'));
    if (searched && !searched.includes(r.resourceType))
      issues.push(
        errorIssue(
          'invalid',
          where,
          `This is not a matching resource type for the specified search (${r.resourceType} expecting [${searched.join(', ')}])`,
        ),
      );
  });
}

const TYPE_NAME = /^[A-Z][A-Za-z]+$/;

/** The types a searchset's `self` link searched: `_type`, else the last path segment when it names a type. */
function searchedTypes(bundle: JsonObject): string[] | undefined {
  const links = Array.isArray(bundle.link) ? (bundle.link as unknown[]) : [];
  const self = links.find((link) => (link as JsonObject | null)?.relation === 'self') as
    JsonObject | undefined;
  if (typeof self?.url !== 'string') return undefined;
  const [pathPart, query = ''] = self.url.split('?', 2);
  const listed = new URLSearchParams(query).get('_type');
  if (listed) {
    const types = listed.split(',').map((type) => type.trim());
    return types.every((type) => TYPE_NAME.test(type)) ? types : undefined;
  }
  const last = pathPart.split('/').pop() ?? '';
  return TYPE_NAME.test(last) ? [last] : undefined;
}
