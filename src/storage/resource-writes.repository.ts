import { Injectable } from '@nestjs/common';
import { historyKey } from '@app/fhir';
import type { TenantContext } from '../tenancy/tenant-context';
import type { HistoryDoc, ResourceDoc } from './documents';
import { type Follower, ResourceIdsRepository } from './resource-ids.repository';
import { ResourceStorage, type TenantStore } from './resource-storage';
import { findScoped } from './scoped-lookups';
import { asOwner, clientWide } from './tenant-scope';

function writerOf(ctx: TenantContext): number {
  if (ctx.userId === null) throw new Error('a write needs the context of one user');
  return ctx.userId;
}

/**
 * The steps of the write protocol on `resources` and `resource_history` (docs/storage.md), which
 * write-protocol.ts composes into creates, updates and deletes, and the removals for good. Documents
 * are written under the context they were built from (ScopedCollection checks that each belongs to
 * it); look-ups of a version's row are client-wide, as its key is.
 */
@Injectable()
export class ResourceWritesRepository {
  constructor(
    private readonly storage: ResourceStorage,
    private readonly ids: ResourceIdsRepository,
  ) {}

  private scoped(ctx: TenantContext): TenantStore {
    return this.storage.scoped(ctx);
  }

  /**
   * The current document whoever of the client owns it, whatever the SMART scopes allow to read:
   * writers decide 409 on it, and refuse with 403 what the scopes do not allow them to replace
   * (write-protocol.ts); never served. Routed by owner (docs/scaling.md): the caller's own document,
   * else the owner its id claim names; no claim, no resource. A claim of the caller's without a
   * document of the caller's (its own create in flight, or an id written before claims existed, on
   * an unsharded database) asks the whole client.
   */
  async findCurrentInClient(ctx: TenantContext, key: string): Promise<ResourceDoc | null> {
    const lookup = (scope: TenantContext) => findScoped(this.storage.scopedForWriter(scope).resources, key);
    if (ctx.userId === null) return lookup(ctx);
    const own = await lookup(ctx);
    if (own) return own;
    const owner = (await this.ids.owners(ctx, [key])).get(key);
    if (owner === undefined) return null;
    return lookup(owner === ctx.userId ? clientWide(ctx) : asOwner(ctx, owner));
  }

  /**
   * Step 1 for a new resource: its id claim (resource-ids.repository.ts), then the document. False
   * when the key exists already or another user holds its claim (someone created it first).
   */
  async insertCurrent(ctx: TenantContext, doc: ResourceDoc): Promise<boolean> {
    if ((await this.ids.claim(ctx, doc.u, [doc._id])).size > 0) return false;
    return (await this.scoped(ctx).resources.insertIgnoringDuplicates([doc])).length === 0;
  }

  /**
   * Step 1 for many new resources at once (bundle ingest), first half: their id claims, per
   * owning user. `refused`: keys another user holds (the caller treats them as existing);
   * `fresh`: keys nobody had claimed before (see `ResourceIdsRepository.claimSaying`).
   * `follower`: a key of the writer's claimed in the same insert when `follower.after`'s claim is
   * new (`followerClaimed`).
   */
  async claimNew(
    ctx: TenantContext,
    docs: readonly ResourceDoc[],
    follower?: Follower,
  ): Promise<{ refused: Set<string>; fresh: Set<string>; followerClaimed: boolean }> {
    const refused = new Set<string>();
    const fresh = new Set<string>();
    let followerClaimed = false;
    for (const userId of new Set(docs.map((doc) => doc.u))) {
      const keys = docs.filter((doc) => doc.u === userId).map((doc) => doc._id);
      const withFollower = follower && userId === writerOf(ctx) && keys.includes(follower.after);
      const claimed = await this.ids.claimSaying(ctx, userId, keys, withFollower ? follower : undefined);
      for (const key of claimed.refused) refused.add(key);
      for (const key of claimed.fresh) fresh.add(key);
      followerClaimed ||= claimed.followerClaimed;
    }
    return { refused, fresh, followerClaimed };
  }

  /**
   * Second half: the documents whose claims are their users' (`claimNew`). Returns the keys that
   * already existed; every other document was inserted.
   */
  async insertClaimed(ctx: TenantContext, docs: readonly ResourceDoc[]): Promise<Set<string>> {
    const existing = await this.scoped(ctx).resources.insertIgnoringDuplicates(docs);
    return new Set(existing.map((index) => docs[index]._id));
  }

  /** Id claim of a key for the writer's user (a Provenance to come); false when another user holds it. */
  async claimForWriter(ctx: TenantContext, key: string): Promise<boolean> {
    return !(await this.ids.claim(ctx, writerOf(ctx), [key])).has(key);
  }

  /**
   * Step 1 for a new version: compare-and-set from version `expectedVid` of the caller's resource.
   * False when another writer got there first (the caller re-reads and retries).
   */
  async compareAndSet(
    ctx: TenantContext,
    key: string,
    expectedVid: number,
    next: Pick<ResourceDoc, 'vid' | 'lu' | 'del' | 'json'> & { idx?: object },
  ): Promise<boolean> {
    const update =
      next.idx === undefined
        ? {
            $set: { vid: next.vid, lu: next.lu, del: next.del, json: next.json },
            $unset: { idx: '' as const },
          }
        : { $set: { vid: next.vid, lu: next.lu, del: next.del, json: next.json, idx: next.idx } };
    const resources = this.scoped(ctx).resources;
    const result = await resources.updateOne(resources.where({ _id: key }, { vid: expectedVid }), update);
    return result.matchedCount === 1;
  }

  /**
   * History rows; rows already there (a retry, a repair) are left as they are, except a row older
   * than the one offered (`lu` earlier): an orphan of an earlier life of the same id, left by an
   * interrupted removal, which the new version replaces. Returns the indexes of rows that were
   * already there and kept.
   */
  async insertHistory(ctx: TenantContext, rows: readonly HistoryDoc[]): Promise<Set<number>> {
    const kept = new Set<number>();
    if (rows.length === 0) return kept;
    const history = this.scoped(ctx).history;
    const client = this.scoped(clientWide(ctx)).history;
    for (const index of await history.insertIgnoringDuplicates(rows)) {
      const row = rows[index];
      const replaced = await client.replaceOne(client.where({ _id: row._id, lu: { $lt: row.lu } }), row);
      if (replaced.matchedCount === 0) kept.add(index);
    }
    return kept;
  }

  /**
   * Claims version `next.vid` of a resource by inserting its history row: the insert of a unique
   * `_id` is atomic, so of concurrent writers of the same version exactly one succeeds. `previous`
   * (the version being replaced) is inserted in the same call in case a crash had left its row
   * missing. Returns false when another writer holds that version.
   */
  async claimVersion(ctx: TenantContext, previous: HistoryDoc, next: HistoryDoc): Promise<boolean> {
    const existing = await this.scoped(ctx).history.insertIgnoringDuplicates([previous, next]);
    return !existing.includes(1);
  }

  findHistoryRowByKey(ctx: TenantContext, rowKey: string): Promise<HistoryDoc | null> {
    const history = this.scoped(clientWide(ctx)).history;
    return history.findOne(history.where({ _id: rowKey }));
  }

  /** Replaces a history row still holding `expectedLu` (an orphan of an earlier life of the id). */
  async replaceHistoryRow(ctx: TenantContext, row: HistoryDoc, expectedLu: Date): Promise<boolean> {
    const history = this.scoped(clientWide(ctx)).history;
    return (
      (await history.replaceOne(history.where({ _id: row._id, lu: expectedLu }), row)).matchedCount === 1
    );
  }

  /**
   * Id claims of current documents to come (Provenances, write-protocol.ts), per owning user;
   * returns the keys another user holds: nothing may be written under those.
   */
  async claimIds(ctx: TenantContext, docs: readonly ResourceDoc[]): Promise<Set<string>> {
    return (await this.claimNew(ctx, docs)).refused;
  }

  /**
   * Inserts current documents whose ids their users hold (`claimIds`) and that may exist already
   * (Provenances with deterministic ids: a retry or a repair names the same); those are left.
   */
  async insertClaimedIgnoringExisting(ctx: TenantContext, docs: readonly ResourceDoc[]): Promise<void> {
    if (docs.length === 0) return;
    await this.scoped(ctx).resources.insertIgnoringDuplicates(docs);
  }

  /**
   * `DELETE …/_history/{vid}`: the version's row becomes `gone` (json dropped). Upserted from
   * `fallback` when a crash had left the row missing, so the removal is never lost.
   */
  async markVersionGone(ctx: TenantContext, row: HistoryDoc): Promise<void> {
    const history = this.scoped(ctx).history;
    const filter = history.where({ _id: row._id });
    // Fields of the filter are copied into an upserted row by the engine; setting them again
    // in $setOnInsert is refused by some engines, so only the others are listed.
    const { _id, json: _json, gone: _gone, c: _c, u, ...identity } = row;
    const onInsert = filter.u === undefined ? { ...identity, u } : identity;
    await history.updateOne(
      filter,
      { $set: { gone: true, json: null }, $setOnInsert: onInsert },
      { upsert: true },
    );
  }

  /**
   * Rewrites version `vid` of a resource in place, current document and history row, with no new
   * version: a removal of other resources taking them out of a bundle's Provenance (`$everything`
   * DELETE), so that nothing still names what was removed. No-op if the resource moved on.
   */
  async rewriteInPlace(
    ctx: TenantContext,
    key: string,
    vid: number,
    next: { json: string; idx: object | undefined },
  ): Promise<void> {
    const { resources, history } = this.scoped(ctx);
    const set = next.idx === undefined ? { $set: { json: next.json } } : { $set: next };
    const moved = await resources.updateOne(resources.where({ _id: key }, { vid }), set);
    if (moved.matchedCount === 0) return;
    await history.updateOne(history.where({ _id: historyKey(key, vid) }), { $set: { json: next.json } });
  }

  /**
   * Removes a resource for good: the current document first (every reader sees 404 at once), then
   * its history rows (a crash in between leaves orphan rows no reader sees; `store check` deletes them).
   */
  async removeResource(ctx: TenantContext, key: string): Promise<boolean> {
    const { resources, history } = this.scoped(ctx);
    const removed = await resources.deleteOne(resources.where({ _id: key }));
    await history.deleteMany(history.where({ rk: key }));
    await this.releaseIds(ctx, [key]);
    return removed.deletedCount === 1;
  }

  /** Id claims of removed resources go last: the id is free once nothing of it is left. */
  private async releaseIds(ctx: TenantContext, keys: readonly string[]): Promise<void> {
    if (ctx.userId !== null) await this.ids.release(ctx, ctx.userId, keys);
  }
  /**
   * Removes many resources for good (`$everything` DELETE), in the order of `removeResource`:
   * the current documents first, then their history rows. Returns how many current documents went.
   */
  async removeResources(ctx: TenantContext, keys: readonly string[]): Promise<number> {
    if (keys.length === 0) return 0;
    const { resources, history } = this.scoped(ctx);
    const removed = await resources.deleteMany(resources.where({ _id: { $in: [...keys] } }));
    await history.deleteMany(history.where({ rk: { $in: [...keys] } }));
    await this.releaseIds(ctx, keys);
    return removed.deletedCount;
  }
}
