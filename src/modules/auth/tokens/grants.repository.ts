import { Injectable } from '@nestjs/common';
import { InjectModel } from '@nestjs/mongoose';
import type { Model, mongo } from 'mongoose';
import type { ClientScope } from '../../../tenancy/tenant-context';
import { isDuplicateKey } from '../../../storage/duplicate-key';
import { clientScope, ScopedCollection, type TenantDocument } from '../../../storage/tenant-scope';
import { AuthCodeDoc, RefreshTokenDoc, RevokedFamilyDoc } from './grant.schemas';

/**
 * `_id` = `${client_id}|${sha256}`: the client is part of the key, so every lookup is one `_id`
 * equality and another client's code or token simply does not exist under this client's key.
 */
function grantKey(scope: ClientScope, hash: string): string {
  return `${scope.clientId}|${hash}`;
}

/** One of the grant collections as the client sees it: its own documents only (`c`, besides the key). */
function scoped<T extends TenantDocument>(model: Model<T>, scope: ClientScope): ScopedCollection<T> {
  return new ScopedCollection(model.collection as unknown as mongo.Collection<T>, clientScope(scope));
}

export type NewAuthCode = Omit<AuthCodeDoc, 'c' | 'used' | 'family'>;
export type NewRefreshToken = Omit<RefreshTokenDoc, 'c' | 'used' | 'revoked'>;

/** The only code touching `auth_codes`, `refresh_tokens` and `revoked_token_families`; every query is scoped to one client. */
@Injectable()
export class GrantsRepository {
  constructor(
    @InjectModel(AuthCodeDoc.name) private readonly codes: Model<AuthCodeDoc>,
    @InjectModel(RefreshTokenDoc.name) private readonly refreshTokens: Model<RefreshTokenDoc>,
    @InjectModel(RevokedFamilyDoc.name) private readonly revokedFamilies: Model<RevokedFamilyDoc>,
  ) {}

  async insertCode(scope: ClientScope, code: NewAuthCode): Promise<void> {
    await scoped(this.codes, scope).insertOne({
      ...code,
      _id: grantKey(scope, code._id),
      c: scope.clientId,
      used: false,
    });
  }

  /**
   * Marks the code used (recording the token family it starts) in one conditional write and
   * returns it as it was, or null when no unused, unexpired code of this client has this hash
   * (unknown, another client's, expired or already used). Of requests racing with one code
   * exactly one wins: the engine applies the filter and the update as one document operation.
   */
  async consumeCode(scope: ClientScope, hash: string, family: string): Promise<AuthCodeDoc | null> {
    const codes = scoped(this.codes, scope);
    return codes.findOneAndUpdate(
      codes.where({ _id: grantKey(scope, hash) }, { used: false, expiresAt: { $gt: new Date() } }),
      { $set: { used: true, family } },
    );
  }

  async findCode(scope: ClientScope, hash: string): Promise<AuthCodeDoc | null> {
    const codes = scoped(this.codes, scope);
    return codes.findOne(codes.where({ _id: grantKey(scope, hash) }));
  }

  async insertRefreshToken(scope: ClientScope, token: NewRefreshToken): Promise<void> {
    await scoped(this.refreshTokens, scope).insertOne({
      ...token,
      _id: grantKey(scope, token._id),
      c: scope.clientId,
      used: false,
      revoked: false,
    });
  }

  /** Marks a live (unused, unrevoked, unexpired) refresh token used in one conditional write; returns it as it was, or null. */
  async consumeRefreshToken(scope: ClientScope, hash: string): Promise<RefreshTokenDoc | null> {
    const tokens = scoped(this.refreshTokens, scope);
    return tokens.findOneAndUpdate(
      tokens.where(
        { _id: grantKey(scope, hash) },
        { used: false, revoked: false, expiresAt: { $gt: new Date() } },
      ),
      { $set: { used: true } },
    );
  }

  async findRefreshToken(scope: ClientScope, hash: string): Promise<RefreshTokenDoc | null> {
    const tokens = scoped(this.refreshTokens, scope);
    return tokens.findOne(tokens.where({ _id: grantKey(scope, hash) }));
  }

  /**
   * Revokes a family: its refresh tokens, and (recorded until `accessTokensUntil`, when the last
   * access token issued with it expires) the access tokens that carry it. The record goes first:
   * a crash in between leaves the refresh tokens usable, never an access token unrecalled.
   */
  async revokeFamily(scope: ClientScope, family: string, accessTokensUntil: Date): Promise<number> {
    const families = scoped(this.revokedFamilies, scope);
    // an inserted record takes its `_id` and `c` from the filter's equalities
    const record = () =>
      families.updateOne(
        families.where({ _id: grantKey(scope, family) }),
        { $set: { expiresAt: accessTokensUntil } },
        { upsert: true },
      );
    // Concurrent replays revoke the same family at once: the upserts that lose the insert race
    // answer a duplicate key (the engine retries such upserts only for a filter on `_id` alone,
    // and the scope adds `c`); the record then exists, so the retry updates it.
    await record().catch((error: unknown) => {
      if (!isDuplicateKey(error)) throw error;
      return record();
    });
    const tokens = scoped(this.refreshTokens, scope);
    const r = await tokens.updateMany(tokens.where({}, { family }), { $set: { revoked: true } });
    return r.modifiedCount;
  }

  async isFamilyRevoked(scope: ClientScope, family: string): Promise<boolean> {
    const families = scoped(this.revokedFamilies, scope);
    return (
      (await families.findOne(families.where({ _id: grantKey(scope, family) }), {
        projection: { _id: 1 },
      })) !== null
    );
  }
}
