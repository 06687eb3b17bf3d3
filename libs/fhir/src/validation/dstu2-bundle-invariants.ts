import { errorIssue, type ValidationIssue } from './validation-issue';

/**
 * The invariants of the DSTU2 (1.0.2) Bundle, bdl-1 … bdl-7, coded from their definition
 * (https://hl7.org/fhir/DSTU2/bundle.html#invs; `human` and XPath of bundle.profile.xml): DSTU2
 * publishes no FHIRPath for them, only XPath, so each is written here with the same meaning.
 * Returns the keys and texts of the invariants the bundle breaks, each with the entry it concerns.
 */

type Json = Record<string, unknown>;

export interface Dstu2BundleViolation {
  key: string;
  human: string;
  /** `Bundle` or `Bundle.entry[i]`. */
  path: string;
}

const HUMAN: Record<string, string> = {
  'bdl-1': 'total only when a search or history',
  'bdl-2': 'entry.search only when a search',
  'bdl-3': 'entry.request only for some types of bundles',
  'bdl-4': 'entry.response only for some types of bundles',
  'bdl-5': "must be a resource unless there's a request or response",
  'bdl-6': 'The fullUrl element must be present when a resource is present, and not present otherwise',
  'bdl-7':
    'FullUrl must be unique in a bundle, or else entries with the same fullUrl must have different meta.versionId',
};

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function versionIdOf(entry: Json): unknown {
  const resource = entry.resource;
  if (!isObject(resource) || !isObject(resource.meta)) return undefined;
  return resource.meta.versionId;
}

export function dstu2BundleViolations(bundle: Json): Dstu2BundleViolation[] {
  const found: Dstu2BundleViolation[] = [];
  const fail = (key: string, path = 'Bundle') => found.push({ key, human: HUMAN[key], path });
  const type = bundle.type;
  const entries = (Array.isArray(bundle.entry) ? bundle.entry : []).filter(isObject);
  const some = (field: string) => entries.some((entry) => entry[field] !== undefined);
  // not(f:total) or (f:type/@value = 'searchset') or (f:type/@value = 'history')
  if (bundle.total !== undefined && type !== 'searchset' && type !== 'history') fail('bdl-1');
  // not(f:entry/f:search) or (f:type/@value = 'searchset')
  if (some('search') && type !== 'searchset') fail('bdl-2');
  // not(f:entry/f:request) or type = 'batch' or 'transaction' or 'history'
  if (some('request') && type !== 'batch' && type !== 'transaction' && type !== 'history') fail('bdl-3');
  // not(f:entry/f:response) or type = 'batch-response' or 'transaction-response'
  if (some('response') && type !== 'batch-response' && type !== 'transaction-response') fail('bdl-4');
  entries.forEach((entry, i) => {
    const path = `Bundle.entry[${i}]`;
    const hasResource = entry.resource !== undefined;
    // f:resource or f:request or f:response
    if (!hasResource && entry.request === undefined && entry.response === undefined) fail('bdl-5', path);
    // (not(fullUrl) and not(resource)) or (fullUrl and resource)
    if ((entry.fullUrl !== undefined) !== hasResource) fail('bdl-6', path);
    if (!hasResource) return;
    // every entry with a resource: exactly one entry (itself) has its fullUrl and the same
    // meta.versionId (or both none); with no fullUrl none matches, so it breaks the rule too
    const versionId = versionIdOf(entry);
    const same = entries.filter(
      (other) =>
        entry.fullUrl !== undefined && other.fullUrl === entry.fullUrl && versionIdOf(other) === versionId,
    ).length;
    if (same !== 1) fail('bdl-7', path);
  });
  return found;
}

/**
 * A transaction or batch a client sends: its entries that create a resource have no URL yet, so DSTU2
 * clients (HAPI's generic client among them) send them without fullUrl; STU3 dropped the requirement
 * for that reason. Such an entry is held to everything but "fullUrl present" (bdl-6) and its
 * uniqueness (bdl-7, which needs a fullUrl to compare); a fullUrl without a resource still breaks bdl-6.
 */
function isUnaddressedRequestEntry(bundle: Json, path: string): boolean {
  if (bundle.type !== 'transaction' && bundle.type !== 'batch') return false;
  const index = /^Bundle\.entry\[(\d+)\]$/.exec(path)?.[1];
  const entry = index === undefined || !Array.isArray(bundle.entry) ? undefined : bundle.entry[Number(index)];
  return isObject(entry) && entry.resource !== undefined && entry.fullUrl === undefined;
}

/**
 * bdl-1 … bdl-7 as validation issues of a DSTU2 Bundle at `path` (a Bundle resource a client writes or
 * asks $validate about), with the one reading above for transaction and batch entries.
 */
export function dstu2BundleIssues(bundle: Json, path: string, issues: ValidationIssue[]): void {
  for (const violation of dstu2BundleViolations(bundle)) {
    if (
      (violation.key === 'bdl-6' || violation.key === 'bdl-7') &&
      isUnaddressedRequestEntry(bundle, violation.path)
    )
      continue;
    const where = path + violation.path.slice('Bundle'.length);
    issues.push(errorIssue('invariant', where, `${violation.key}: ${violation.human}`, violation.key));
  }
}
