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
  if (type !== 'history') checkAmbiguousReferences(bundle.entry as unknown[], path, issues);
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
 * Before R4 a document's date is its Bundle's meta.lastUpdated, "mandatory"
 * (https://hl7.org/fhir/STU3/documents.html#content; R4 moved it to Bundle.timestamp, bdl-10).
 */
export function checkDocumentDate(bundle: JsonObject, path: string, issues: ValidationIssue[]): void {
  if (bundle.type !== 'document') return;
  const meta = bundle.meta as JsonObject | undefined;
  if (typeof meta?.lastUpdated === 'string') return;
  issues.push(
    errorIssue(
      'required',
      `${path}.meta.lastUpdated`,
      'A document must have a date (Bundle.meta.lastUpdated)',
      'document-date',
    ),
  );
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

/**
 * A reference between entries resolves by the fullUrl rules (https://hl7.org/fhir/R4/bundle.html#references):
 * `Type/id` against the base of the referring entry's fullUrl (`http://x.org/fhir/` of
 * `http://x.org/fhir/Composition/1`, or `urn:uuid:`), `Type/id/_history/v` to the entry of that fullUrl
 * whose meta.versionId is v. Entries may share a fullUrl when their versions differ (bdl-7): a
 * reference without a version then matches more than one entry, and the reference validator refuses it
 * (Bundle_BUNDLE_MultipleMatches), since nothing says which version is meant. Not in a history: there
 * every version of a resource has its entry under one fullUrl by design (bdl-7 exempts it), so a
 * reference between entries naming no version is the normal case (the reference refuses it there too;
 * this server writes such histories and holds them valid).
 */
function checkAmbiguousReferences(
  entries: readonly unknown[],
  path: string,
  issues: ValidationIssue[],
): void {
  const byFullUrl = new Map<string, JsonObject[]>();
  for (const entry of entries) {
    const { fullUrl, resource } = (entry ?? {}) as JsonObject;
    if (typeof fullUrl !== 'string' || typeof resource !== 'object' || resource === null) continue;
    const list = byFullUrl.get(fullUrl) ?? [];
    list.push(resource as JsonObject);
    byFullUrl.set(fullUrl, list);
  }
  // Only a fullUrl held by two entries or more can be matched twice: most Bundles stop here.
  if (![...byFullUrl.values()].some((list) => list.length > 1)) return;
  entries.forEach((entry, i) => {
    const { fullUrl, resource } = (entry ?? {}) as JsonObject;
    if (typeof fullUrl !== 'string' || typeof resource !== 'object' || resource === null) return;
    forEachReference(resource, `${path}.entry[${i}].resource`, 0, (reference, at) => {
      const target = resolutionTarget(reference, fullUrl);
      if (!target) return;
      const candidates = byFullUrl.get(target.url) ?? [];
      const matches = target.version
        ? candidates.filter((r) => (r.meta as JsonObject | undefined)?.versionId === target.version)
        : candidates;
      if (matches.length > 1)
        issues.push(
          errorIssue(
            'invalid',
            at,
            `Multiple matches in bundle for reference ${reference}`,
            'bundle-multiple-matches',
          ),
        );
    });
  });
}

const HISTORY = '/_history/';

/** The fullUrl (and version) a reference from the entry at `fullUrl` points to, by the Bundle rules. */
function resolutionTarget(reference: string, fullUrl: string): { url: string; version?: string } | undefined {
  const at = reference.indexOf(HISTORY);
  const unversioned = at < 0 ? reference : reference.slice(0, at);
  const version = at < 0 ? undefined : reference.slice(at + HISTORY.length);
  if (ABSOLUTE.test(reference)) return { url: unversioned, version };
  const parts = unversioned.split('/');
  if (parts.length !== 2 || !parts[0] || !parts[1]) return undefined;
  if (fullUrl.startsWith('urn:')) {
    // urn:uuid:… entries: `Type/id` means urn:uuid:id
    return { url: `${fullUrl.slice(0, fullUrl.lastIndexOf(':') + 1)}${parts[1]}`, version };
  }
  const segments = fullUrl.split('/');
  if (segments.length < 3) return undefined;
  return { url: `${segments.slice(0, -2).join('/')}/${unversioned}`, version };
}

/**
 * Each `reference` string under an entry's resource, with its path. A Bundle (the entry's resource or
 * one nested deeper) is left out: its entries resolve in it, checked when the walker reaches it.
 */
function forEachReference(
  value: unknown,
  path: string,
  depth: number,
  visit: (reference: string, path: string) => void,
): void {
  if (depth > 100 || typeof value !== 'object' || value === null) return;
  if (Array.isArray(value)) {
    value.forEach((item, i) => forEachReference(item, `${path}[${i}]`, depth + 1, visit));
    return;
  }
  const object = value as JsonObject;
  if (object.resourceType === 'Bundle') return;
  for (const key in object) {
    const child = object[key];
    if (key === 'reference' && typeof child === 'string') {
      if (!child.startsWith('#')) visit(child, `${path}.reference`);
    } else forEachReference(child, `${path}.${key}`, depth + 1, visit);
  }
}
