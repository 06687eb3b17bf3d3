import { randomUUID } from 'node:crypto';
import type { FhirVersion } from '../definitions/fhir-version';
import { outcomeIn } from '../outcome/issue-codes';
import type { OperationOutcome } from '../outcome/operation-outcome';

/**
 * Response Bundles built as JSON text: stored resources are kept as the exact JSON string they are
 * served as (docs/storage.md), so a searchset/history page is assembled by concatenation, never by
 * parsing and re-serialising every resource (the read hot path).
 */

export interface BundleLink {
  relation: 'self' | 'first' | 'previous' | 'next' | 'last';
  url: string;
}

export interface SearchsetEntry {
  fullUrl: string;
  /** The resource as stored JSON text (preferred) … */
  resourceJson?: string;
  /** … or as an object (OperationOutcome entries, computed resources). */
  resource?: object;
  /** `match` for hits, `include` for `_include`/`_revinclude`, `outcome` for warnings. */
  mode?: 'match' | 'include' | 'outcome';
}

export interface SearchsetBundleInput {
  total?: number;
  links?: BundleLink[];
  entries: SearchsetEntry[];
  id?: string;
  timestamp?: string;
}

export function searchsetBundleJson(input: SearchsetBundleInput): string {
  return bundleJson('searchset', input, input.entries.map(searchsetEntryJson));
}

/**
 * Head and entries of a Bundle as JSON text. No `entry` (nor `link`) when there is none: empty
 * arrays are not valid FHIR JSON (https://hl7.org/fhir/R4/json.html).
 */
function bundleJson(
  type: string,
  input: { id?: string; timestamp?: string; total?: number; links?: BundleLink[] },
  entries: readonly string[],
): string {
  const head: Record<string, unknown> = { resourceType: 'Bundle' };
  if (input.id) head.id = input.id;
  head.meta = { lastUpdated: input.timestamp ?? new Date().toISOString() };
  head.type = type;
  if (input.total !== undefined) head.total = input.total;
  if (input.links && input.links.length > 0) head.link = input.links;
  const headJson = JSON.stringify(head);
  return entries.length === 0 ? headJson : `${headJson.slice(0, -1)},"entry":[${entries.join(',')}]}`;
}

function searchsetEntryJson(entry: SearchsetEntry): string {
  const parts = [`"fullUrl":${JSON.stringify(entry.fullUrl)}`];
  if (entry.resourceJson !== undefined) parts.push(`"resource":${entry.resourceJson}`);
  else if (entry.resource !== undefined) parts.push(`"resource":${JSON.stringify(entry.resource)}`);
  parts.push(`"search":{"mode":"${entry.mode ?? 'match'}"}`);
  return `{${parts.join(',')}}`;
}

/**
 * One entry of a `history` Bundle (https://hl7.org/fhir/R4/http.html#history): the version's
 * resource (absent for a deleted or removed version), the interaction that made it and its outcome.
 * `fullUrl` is the resource's URL without `/_history/n` (bdl-8: not version specific).
 */
export interface HistoryEntry {
  fullUrl: string;
  resourceJson?: string;
  request: { method: 'POST' | 'PUT' | 'DELETE' | 'PATCH'; url: string };
  /** R4 only: STU3 and DSTU2 Bundles allow `response` in batch/transaction responses alone (bdl-4). */
  response?: { status: string; etag: string; lastModified: string; outcome?: OperationOutcome };
}

export function historyBundleJson(
  version: FhirVersion,
  input: { total?: number; links?: BundleLink[]; entries: readonly HistoryEntry[] },
): string {
  const entries = input.entries.map((entry) => {
    const parts: string[] = [];
    if (fullUrlAllowed(version, entry.resourceJson !== undefined))
      parts.push(`"fullUrl":${JSON.stringify(entry.fullUrl)}`);
    if (entry.resourceJson !== undefined) parts.push(`"resource":${entry.resourceJson}`);
    parts.push(`"request":${JSON.stringify(entry.request)}`);
    if (entry.response) parts.push(`"response":${JSON.stringify(entry.response)}`);
    return `{${parts.join(',')}}`;
  });
  return bundleJson('history', input, entries);
}

/**
 * DSTU2 bdl-6 (https://hl7.org/fhir/DSTU2/bundle.html#invs): "The fullUrl element must be present
 * when a resource is present, and not present otherwise". R4 and STU3 keep a fullUrl on an entry
 * without resource (a delete in a history, a minimal transaction response): it says which resource.
 */
function fullUrlAllowed(version: FhirVersion, hasResource: boolean): boolean {
  return version !== 'dstu2' || hasResource;
}

/**
 * Paging links of a page at `skip` of `count` over `total` hits. `baseUrl` is the absolute search URL
 * without paging parameters; `query` the other parameters, repeated on every link.
 */
export function pagingLinks(
  baseUrl: string,
  query: ReadonlyArray<[string, string]>,
  /** `served`: entries on this page when fewer than `count` (a byte budget cut it); next follows them. */
  page: { skip: number; count: number; total: number; served?: number },
): BundleLink[] {
  const url = (skip: number): string => {
    const params = new URLSearchParams([...query, ['_count', String(page.count)], ['_skip', String(skip)]]);
    return `${baseUrl}?${params.toString()}`;
  };
  const { skip, count, total } = page;
  const lastSkip = total === 0 || count === 0 ? 0 : Math.floor((total - 1) / count) * count;
  const links: BundleLink[] = [
    { relation: 'self', url: url(skip) },
    { relation: 'first', url: url(0) },
  ];
  if (skip > 0 && count > 0) links.push({ relation: 'previous', url: url(Math.max(0, skip - count)) });
  const next = skip + Math.min(count, page.served || count);
  if (count > 0 && next < total) links.push({ relation: 'next', url: url(next) });
  links.push({ relation: 'last', url: url(lastSkip) });
  return links;
}

/** One entry of a `transaction-response`/`batch-response` (https://hl7.org/fhir/R4/bundle.html#transaction-response). */
export interface TransactionResponseEntry {
  fullUrl?: string;
  resource?: object;
  resourceJson?: string;
  response: {
    status: string;
    location?: string;
    etag?: string;
    lastModified?: string;
    outcome?: OperationOutcome;
  };
}

/**
 * DSTU2 has no `entry.response.outcome` (https://hl7.org/fhir/DSTU2/bundle.html): there the
 * OperationOutcome of an entry that served no resource is the entry's resource, under a `urn:uuid:`
 * fullUrl (bdl-6: a fullUrl exactly when a resource is there). STU3 gets the issue codes it knows.
 */
export function transactionResponseJson(
  version: FhirVersion,
  type: 'transaction-response' | 'batch-response',
  entries: TransactionResponseEntry[],
): string {
  const parts = entries.map((entry) => {
    const { outcome, ...response } = entry.response;
    let { fullUrl, resource } = entry;
    const served = entry.resourceJson !== undefined || resource !== undefined;
    if (version === 'dstu2' && outcome && !served) {
      resource = outcomeIn(version, outcome);
      fullUrl = `urn:uuid:${randomUUID()}`;
    }
    const hasResource = entry.resourceJson !== undefined || resource !== undefined;
    const fields: string[] = [];
    if (fullUrl && fullUrlAllowed(version, hasResource)) fields.push(`"fullUrl":${JSON.stringify(fullUrl)}`);
    if (entry.resourceJson !== undefined) fields.push(`"resource":${entry.resourceJson}`);
    else if (resource !== undefined) fields.push(`"resource":${JSON.stringify(resource)}`);
    if (outcome && version !== 'dstu2')
      fields.push(`"response":${JSON.stringify({ ...response, outcome: outcomeIn(version, outcome) })}`);
    else fields.push(`"response":${JSON.stringify(response)}`);
    return `{${fields.join(',')}}`;
  });
  return bundleJson(type, {}, parts);
}
