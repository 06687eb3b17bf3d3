/**
 * `resource_ids`: one claim per resource key (`resourceKey(v, c, t, id)`) naming the user who owns
 * it. Sharded on `_id` (docs/scaling.md), so its `_id` is unique across the whole cluster where the
 * resource collections, sharded by (client, user), keep `_id` unique only within one user.
 */
export const RESOURCE_IDS_COLLECTION = 'resource_ids';

export interface ResourceIdDoc {
  /** The resource key. */
  _id: string;
  c: string;
  /** The owning user. */
  u: number;
  /** When it was claimed or taken over (a claim without a resource is taken over once stale). */
  at: Date;
}
