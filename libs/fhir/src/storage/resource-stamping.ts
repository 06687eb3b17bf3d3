import { issue, operationOutcome, type OperationOutcome } from '../outcome/operation-outcome';

/**
 * What the server writes into every stored version (docs/api.md §14): `id`, `meta.versionId` (digits,
 * from 1) and `meta.lastUpdated`. Other `meta` elements the client sent (profile, tag, security)
 * are kept. `resourceType`, `id`, `meta` lead, as FHIR's JSON examples order them.
 */
export function stampResource(
  resource: Record<string, unknown>,
  id: string,
  versionId: number,
  lastUpdated: Date,
): Record<string, unknown> {
  const { resourceType, id: _ignoredId, meta, ...rest } = resource;
  const clientMeta = meta !== null && typeof meta === 'object' && !Array.isArray(meta) ? meta : {};
  const { versionId: _v, lastUpdated: _l, ...keptMeta } = clientMeta as Record<string, unknown>;
  return {
    resourceType,
    id,
    meta: { ...keptMeta, versionId: String(versionId), lastUpdated: lastUpdated.toISOString() },
    ...rest,
  };
}

/** docs/api.md §7: the answer to a DELETE — severity `information`, code `value`, text naming id and version. */
export function deletedOutcome(type: string, id: string, versionId: number): OperationOutcome {
  return operationOutcome([
    issue('value', `Resource ${type}/${id} with version ${versionId} has been deleted.`, {
      severity: 'information',
    }),
  ]);
}

/**
 * A history entry standing for a version that is no longer there (docs/api.md §7): the delete tombstone
 * of `DELETE …/{id}`, or a version removed with `DELETE …/_history/{vid}`.
 */
export function deletedVersionOutcome(
  type: string,
  id: string,
  versionId: number,
  reason: 'deleted' | 'removed',
): OperationOutcome {
  const text =
    reason === 'deleted'
      ? `Resource ${type}/${id} with version ${versionId} has been deleted.`
      : `Version ${versionId} of resource ${type}/${id} has been deleted (removed from history).`;
  return operationOutcome([issue('deleted', text, { severity: 'information' })]);
}
