/**
 * The directory as FHIR R4 resources (docs/api.md §11): each entry is an `Organization`
 * (https://hl7.org/fhir/R4/organization.html) and, when it has a FHIR base URL, an `Endpoint`
 * (https://hl7.org/fhir/R4/endpoint.html) with the same id. Served read-only under
 * `/directory/r4/...`, apart from the tenant FHIR store (which holds per-user data). Pure mapping.
 */
import type { DirectoryEntry, SystemType } from './directory-entry';

export const DIRECTORY_TAG = { system: 'urn:fhir-data-service:tag', code: 'directory' };
export const DIRECTORY_ID_SYSTEM = 'urn:fhir-data-service:directory-id';

/** Organization type per system type (http://terminology.hl7.org/CodeSystem/organization-type). */
const ORGANIZATION_TYPE: Record<SystemType, { code: string; display: string }> = {
  HealthSystem: { code: 'prov', display: 'Healthcare Provider' },
  Payer2Payer: { code: 'pay', display: 'Payer' },
  PayerPatientAccess: { code: 'pay', display: 'Payer' },
};
/** The system type itself, kept as a second coding so a client can filter on it exactly. */
export const SYSTEM_TYPE_CODE_SYSTEM = 'urn:fhir-data-service:directory-system-type';

function meta(entry: DirectoryEntry) {
  return { lastUpdated: entry.updated_at, tag: [DIRECTORY_TAG] };
}

export function toOrganization(entry: DirectoryEntry): Record<string, unknown> {
  const type = ORGANIZATION_TYPE[entry.system_type];
  const address = entry.address;
  const hasAddress = address.line.length > 0 || address.city || address.state || address.postalCode;
  return {
    resourceType: 'Organization',
    id: entry.id,
    meta: meta(entry),
    identifier: [{ system: DIRECTORY_ID_SYSTEM, value: entry.id }],
    active: entry.status === 'active',
    type: [
      {
        coding: [
          { system: 'http://terminology.hl7.org/CodeSystem/organization-type', ...type },
          { system: SYSTEM_TYPE_CODE_SYSTEM, code: entry.system_type },
        ],
        text: type.display,
      },
    ],
    name: entry.name,
    ...(hasAddress
      ? {
          address: [
            {
              ...(address.line.length > 0 ? { line: address.line } : {}),
              ...(address.city ? { city: address.city } : {}),
              ...(address.state ? { state: address.state } : {}),
              ...(address.postalCode ? { postalCode: address.postalCode } : {}),
            },
          ],
        }
      : {}),
    ...(entry.fhir_base_url ? { endpoint: [{ reference: `Endpoint/${entry.id}` }] } : {}),
  };
}

/** Null when the entry has no FHIR base URL (no Endpoint to describe). */
export function toEndpoint(entry: DirectoryEntry): Record<string, unknown> | null {
  if (!entry.fhir_base_url) return null;
  return {
    resourceType: 'Endpoint',
    id: entry.id,
    meta: meta(entry),
    status: entry.status === 'active' ? 'active' : 'off',
    connectionType: {
      system: 'http://terminology.hl7.org/CodeSystem/endpoint-connection-type',
      code: 'hl7-fhir-rest',
    },
    name: entry.name,
    managingOrganization: { reference: `Organization/${entry.id}`, display: entry.name },
    payloadType: [{ coding: [{ system: 'http://hl7.org/fhir/resource-types', code: 'Patient' }] }],
    payloadMimeType: ['application/fhir+json'],
    address: entry.fhir_base_url,
    ...(entry.ehr
      ? { extension: [{ url: 'urn:fhir-data-service:ehr-vendor', valueString: entry.ehr }] }
      : {}),
  };
}

export interface SearchsetPage {
  total: number;
  offset: number;
  count: number;
  resources: Record<string, unknown>[];
  /** Absolute URL of the search without paging parameters (…/Organization?name=x). */
  selfBase: string;
  fullUrlBase: string;
}

export function searchsetBundle(page: SearchsetPage): Record<string, unknown> {
  const sep = page.selfBase.includes('?') ? '&' : '?';
  const link = (relation: string, offset: number) => ({
    relation,
    url: `${page.selfBase}${sep}_count=${page.count}&_offset=${offset}`,
  });
  const links = [link('self', page.offset)];
  if (page.offset + page.count < page.total) links.push(link('next', page.offset + page.count));
  if (page.offset > 0) links.push(link('previous', Math.max(0, page.offset - page.count)));
  return {
    resourceType: 'Bundle',
    type: 'searchset',
    total: page.total,
    link: links,
    entry: page.resources.map((resource) => ({
      fullUrl: `${page.fullUrlBase}/${String(resource.resourceType)}/${String(resource.id)}`,
      resource,
      search: { mode: 'match' },
    })),
  };
}
