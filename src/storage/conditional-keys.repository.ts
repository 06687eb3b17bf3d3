import { createHash } from 'crypto';
import { Injectable, OnModuleInit } from '@nestjs/common';
import { InjectConnection } from '@nestjs/mongoose';
import type { Connection, mongo } from 'mongoose';
import type { FhirVersion } from '@app/fhir';
import { ensureIndexes } from '../database/ensure-indexes';
import type { TenantContext } from '../tenancy/tenant-context';
import { isDuplicateKey } from './duplicate-key';
import { clientScope, ScopedCollection } from './tenant-scope';

/**
 * `conditional_keys`: one document per (version, client, user, type, normalized criteria) of a
 * conditional create in progress or just done — HAPI's search-URL table (HFJ_RES_SEARCH_URL). Its
 * unique `_id` makes exactly one of concurrent identical conditional creates the creator; the
 * others read `rk` and answer with that resource. docs/storage.md "Conditional create" has the
 * protocol and why a key never blocks for long.
 */
export const CONDITIONAL_KEYS_COLLECTION = 'conditional_keys';

export interface ConditionalKeyDoc {
  /** sha256 of `v|c|u|t|criteria` (criteria: the condition's pairs, sorted, URL-encoded). */
  _id: string;
  c: string;
  u: number;
  /** The resource key (`resourceKey`) the claimant creates. */
  rk: string;
  /** When it was claimed: a key older than the stale time no longer decides anything. */
  at: Date;
}

/** Keys are only needed for the moments of a race; the engine removes them after an hour. */
const KEY_TTL_SECONDS = 3600;

/** The key of a condition: criteria sorted, so `a=1&b=2` and `b=2&a=1` are one condition. */
export function conditionKey(
  ctx: TenantContext,
  version: FhirVersion,
  type: string,
  pairs: ReadonlyArray<readonly [string, string]>,
): string {
  const criteria = new URLSearchParams(
    [...pairs].sort(([a, x], [b, y]) => (a === b ? (x < y ? -1 : x > y ? 1 : 0) : a < b ? -1 : 1)) as Array<
      [string, string]
    >,
  ).toString();
  return createHash('sha256')
    .update([version, ctx.clientId, String(ctx.userId), type, criteria].join('|'))
    .digest('base64url');
}

@Injectable()
export class ConditionalKeysRepository implements OnModuleInit {
  constructor(@InjectConnection() private readonly connection: Connection) {}

  private get keys(): mongo.Collection<ConditionalKeyDoc> {
    return this.connection.db!.collection<ConditionalKeyDoc>(CONDITIONAL_KEYS_COLLECTION);
  }

  /** The client's keys (a key's hash names its user already, so the client scopes it). */
  private scoped(ctx: TenantContext): ScopedCollection<ConditionalKeyDoc> {
    return new ScopedCollection(this.keys, clientScope(ctx));
  }

  async onModuleInit(): Promise<void> {
    await ensureIndexes(this.keys, [{ key: { at: 1 }, name: 'expiry', expireAfterSeconds: KEY_TTL_SECONDS }]);
  }

  /** True when this caller now holds the key (it did not exist). */
  async claim(ctx: TenantContext, key: string, rk: string): Promise<boolean> {
    try {
      await this.scoped(ctx).insertOne({
        _id: key,
        c: ctx.clientId,
        u: ctx.userId ?? -1,
        rk,
        at: new Date(),
      });
      return true;
    } catch (error) {
      if (isDuplicateKey(error)) return false;
      throw error;
    }
  }

  find(ctx: TenantContext, key: string): Promise<ConditionalKeyDoc | null> {
    const keys = this.scoped(ctx);
    return keys.findOne(keys.where({ _id: key }));
  }

  /** Takes over a key that decides nothing any more (stale, or its resource deleted): compare-and-set. */
  async takeOver(ctx: TenantContext, held: ConditionalKeyDoc, rk: string): Promise<boolean> {
    const keys = this.scoped(ctx);
    const result = await keys.updateOne(keys.where({ _id: held._id }, { rk: held.rk, at: held.at }), {
      $set: { rk, at: new Date() },
    });
    return result.matchedCount === 1;
  }

  /** Gives a key back when its create failed (a refused body): nobody waits for it. */
  async release(ctx: TenantContext, key: string, rk: string): Promise<void> {
    const keys = this.scoped(ctx);
    await keys.deleteOne(keys.where({ _id: key }, { rk }));
  }
}
