import { Injectable } from '@nestjs/common';
import { InjectConnection } from '@nestjs/mongoose';
import type { Connection, mongo } from 'mongoose';
import type { TenantContext } from '../tenancy/tenant-context';
import { RESOURCES_COLLECTION } from './documents';
import { ResourceStorage } from './resource-storage';
import { asOwner, clientScope, insertIgnoringDuplicates, ScopedCollection } from './tenant-scope';

/**
 * `resource_ids`: one claim per resource key (`resourceKey(v, c, t, id)`) naming the user who owns
 * it. Sharded on `_id` (docs/scaling.md), so its `_id` is unique across the whole cluster, where the
 * resource collections, sharded by (client, user), keep `_id` unique only within one user: a new
 * resource is claimed here before its first version is written, and two users of one client racing
 * for one id are decided by this one insert on every engine.
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

/**
 * A claim whose user holds neither a current document nor a history row of the key after this
 * long is abandoned (its creator died between claim and write, or a removal was cut off before
 * the claim went): another user may take it over. A live create writes its resource within ms.
 */
const STALE_CLAIM_MS = 10_000;

/**
 * A key claimed beside others only when the claim of `after` is new, in the same insert (a bundle's
 * Provenance, named after its first create: write-protocol.ts `createMany`).
 */
export interface Follower {
  after: string;
  key: string;
}

const BACKFILL_BATCH = 1000;

@Injectable()
export class ResourceIdsRepository {
  constructor(
    @InjectConnection() private readonly connection: Connection,
    private readonly storage: ResourceStorage,
  ) {}

  private get ids(): mongo.Collection<ResourceIdDoc> {
    return this.connection.db!.collection<ResourceIdDoc>(RESOURCE_IDS_COLLECTION);
  }

  /**
   * The client's claims; with `userId`, those that user holds. A claim's user is its owner within
   * the client: the writer of another user must see it, which is how one id stays one user's.
   */
  private scoped(ctx: TenantContext, userId: number | null = null): ScopedCollection<ResourceIdDoc> {
    return new ScopedCollection(this.ids, clientScope(ctx, userId));
  }

  /**
   * Claims `keys` for the writer's user. Returns the keys another user of the client holds (the
   * caller treats them as existing); every other key is this user's now, or was already.
   */
  async claim(ctx: TenantContext, userId: number, keys: readonly string[]): Promise<Set<string>> {
    return (await this.claimSaying(ctx, userId, keys)).refused;
  }

  /**
   * `claim`, also saying which keys this call claimed first (`fresh`: no claim existed, so no
   * resource of the key does either, except ids written before claims existed).
   */
  async claimSaying(
    ctx: TenantContext,
    userId: number,
    keys: readonly string[],
    follower?: Follower,
  ): Promise<{ refused: Set<string>; fresh: Set<string>; followerClaimed: boolean }> {
    const refused = new Set<string>();
    const fresh = new Set<string>();
    let followerClaimed = false;
    let pending = [...new Set(keys)];
    // A claim released between our insert and our read is inserted again (once is enough: a
    // release follows a removal, which does not repeat within a write).
    for (let round = 0; round < 2 && pending.length > 0; round++) {
      const at = new Date();
      const claims = this.scoped(ctx, userId);
      const claimOf = (_id: string): ResourceIdDoc => ({ _id, c: ctx.clientId, u: userId, at });
      let contested: string[];
      if (round === 0 && follower && pending.includes(follower.after) && !pending.includes(follower.key)) {
        const outcome = await this.claimWithFollower(claims, pending, follower, claimOf);
        contested = outcome.contested;
        followerClaimed = outcome.followerClaimed;
      } else {
        const taken = await claims.insertIgnoringDuplicates(pending.map(claimOf));
        contested = taken.map((index) => pending[index]);
      }
      const lost = new Set(contested);
      for (const key of pending) if (!lost.has(key)) fresh.add(key);
      pending = [];
      if (contested.length === 0) break;
      const client = this.scoped(ctx);
      const holders = await client.find(client.where({ _id: { $in: contested } })).toArray();
      const held = new Map(holders.map((h) => [h._id, h]));
      pending = contested.filter((key) => !held.has(key));
      for (const holder of holders) {
        if (holder.u === userId) continue;
        if (!(await this.takeOverAbandoned(ctx, holder, userId))) refused.add(holder._id);
      }
    }
    for (const key of pending) refused.add(key);
    return { refused, fresh, followerClaimed };
  }

  /**
   * The first round of `claimSaying` with a follower: one ordered insert of `after`'s claim, the
   * follower's, then the others'. An ordered insert stops at its first duplicate, so the follower
   * is claimed only when `after` was claimed by this very insert (nobody's before), and a refused
   * follower claims nothing in its place; the claims the insert did not reach go in after it,
   * unordered, as without a follower. In the common case (every key new) one command.
   */
  private async claimWithFollower(
    claims: ScopedCollection<ResourceIdDoc>,
    pending: readonly string[],
    follower: Follower,
    claimOf: (key: string) => ResourceIdDoc,
  ): Promise<{ contested: string[]; followerClaimed: boolean }> {
    const order = [follower.after, follower.key, ...pending.filter((key) => key !== follower.after)];
    const stoppedAt = await claims.insertOrderedUntilDuplicate(order.map(claimOf));
    if (stoppedAt === null) return { contested: [], followerClaimed: true };
    const contested = stoppedAt === 1 ? [] : [order[stoppedAt]];
    const rest = order.slice(stoppedAt + 1).filter((key) => key !== follower.key);
    const taken = await claims.insertIgnoringDuplicates(rest.map(claimOf));
    for (const index of taken) contested.push(rest[index]);
    return { contested, followerClaimed: stoppedAt > 1 };
  }

  /** The owning user of each key that has a claim. */
  async owners(ctx: TenantContext, keys: readonly string[]): Promise<Map<string, number>> {
    if (keys.length === 0) return new Map();
    const client = this.scoped(ctx);
    const docs = await client
      .find(client.where({ _id: { $in: [...keys] } }), { projection: { u: 1 } })
      .toArray();
    return new Map(docs.map((doc) => [doc._id, doc.u]));
  }

  /** Gives the claims of removed resources back (after their current documents and history rows). */
  async release(ctx: TenantContext, userId: number, keys: readonly string[]): Promise<void> {
    if (keys.length === 0) return;
    const claims = this.scoped(ctx, userId);
    await claims.deleteMany(claims.where({ _id: { $in: [...keys] } }));
  }

  /** `release` for every key of the user in `[from, to)` but `except` (a purge slice). */
  async releaseRange(
    ctx: TenantContext,
    userId: number,
    range: { from: string; to: string },
    except: readonly string[],
  ): Promise<void> {
    const _id: { $gte: string; $lt: string; $nin?: string[] } = { $gte: range.from, $lt: range.to };
    if (except.length > 0) _id.$nin = [...except];
    const claims = this.scoped(ctx, userId);
    await claims.deleteMany(claims.where({ _id }));
  }

  /**
   * Takes over a stale claim whose user has nothing under the key (compare-and-set on its user
   * and time, so of two users taking over at once one wins). Look-ups by (client, user): routed.
   */
  private async takeOverAbandoned(
    ctx: TenantContext,
    holder: ResourceIdDoc,
    userId: number,
  ): Promise<boolean> {
    if (Date.now() - holder.at.getTime() < STALE_CLAIM_MS) return false;
    const { resources, history } = this.storage.scoped(asOwner(ctx, holder.u));
    const [current, row] = await Promise.all([
      resources.findOne(resources.where({ _id: holder._id }), { projection: { _id: 1 } }),
      history.findOne(history.where({ rk: holder._id }), { projection: { _id: 1 } }),
    ]);
    if (current || row) return false;
    const held = this.scoped(ctx, holder.u);
    const moved = await held.updateOne(held.where({ _id: holder._id }, { at: holder.at }), {
      $set: { u: userId, at: new Date() },
    });
    return moved.matchedCount === 1;
  }
}

/**
 * Claims for current documents written before claims existed, in database `db` (`store shard` runs
 * it before sharding: on a sharded engine only a claim keeps two users from one id). Operator work
 * over every tenant, never behind an HTTP route. Returns how many claims were added.
 */
export async function backfillResourceIds(
  db: mongo.Db,
  onProgress?: (seen: number) => void,
): Promise<number> {
  const resources = db.collection<{ _id: string; c: string; u: number }>(RESOURCES_COLLECTION);
  const ids = db.collection<ResourceIdDoc>(RESOURCE_IDS_COLLECTION);
  let batch: ResourceIdDoc[] = [];
  let added = 0;
  let seen = 0;
  const flush = async () => {
    const existed = await insertIgnoringDuplicates(ids, batch);
    added += batch.length - existed.length;
    seen += batch.length;
    batch = [];
    onProgress?.(seen);
  };
  const at = new Date();
  for await (const doc of resources.find({}, { projection: { c: 1, u: 1 } })) {
    batch.push({ _id: doc._id, c: doc.c, u: doc.u, at });
    if (batch.length >= BACKFILL_BATCH) await flush();
  }
  if (batch.length > 0) await flush();
  return added;
}
