import { historyKey, type FhirVersion } from '@app/fhir';

/**
 * Document shapes of the `resources` and `resource_history` collections (docs/storage.md). The
 * search index `idx` is owned by libs/fhir/src/search and stored opaquely here.
 */
export const RESOURCES_COLLECTION = 'resources';
export const HISTORY_COLLECTION = 'resource_history';

export interface ResourceDoc {
  /** `resourceKey(v, c, t, id)` */
  _id: string;
  v: FhirVersion;
  c: string;
  u: number;
  t: string;
  id: string;
  vid: number;
  lu: Date;
  del: boolean;
  /** The resource exactly as served; null on a delete tombstone. */
  json: string | null;
  idx?: object;
}

export interface HistoryDoc extends Omit<ResourceDoc, 'idx'> {
  /** `historyKey(rk, vid)` */
  _id: string;
  /** The `_id` of the current document. */
  rk: string;
  /** This single version was removed with `DELETE …/_history/{vid}` (json nulled). */
  gone?: boolean;
}

/** History row of the version a current document holds (write protocol step 2). */
export function historyOf(doc: ResourceDoc): HistoryDoc {
  return {
    _id: historyKey(doc._id, doc.vid),
    rk: doc._id,
    v: doc.v,
    c: doc.c,
    u: doc.u,
    t: doc.t,
    id: doc.id,
    vid: doc.vid,
    lu: doc.lu,
    del: doc.del,
    json: doc.json,
  };
}
