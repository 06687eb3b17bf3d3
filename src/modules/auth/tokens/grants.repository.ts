import { Injectable } from '@nestjs/common';
import { InjectModel } from '@nestjs/mongoose';
import type { Model } from 'mongoose';
import { ClientScope, clientFilter } from '../../../tenancy/tenant-context';
import { AuthCodeDoc, RefreshTokenDoc, RevokedFamilyDoc } from './grant.schemas';

/**
 * `_id` = `${client_id}|${sha256}`: the client is part of the key, so every lookup is one `_id`
 * equality and another client's code or token simply does not exist under this client's key.
 */
function grantKey(scope: ClientScope, hash: string): string {
  return `${clientFilter(scope).c}|${hash}`;
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
    await this.codes.create({ ...code, _id: grantKey(scope, code._id), ...clientFilter(scope), used: false });
  }

  /**
   * Marks the code used (recording the token family it starts) in one conditional write and
   * returns it as it was, or null when no unused, unexpired code of this client has this hash
   * (unknown, another client's, expired or already used). Of requests racing with one code
   * exactly one wins: the engine applies the filter and the update as one document operation.
   */
  async consumeCode(scope: ClientScope, hash: string, family: string): Promise<AuthCodeDoc | null> {
    return this.codes
      .findOneAndUpdate(
        { _id: grantKey(scope, hash), used: false, expiresAt: { $gt: new Date() } },
        { $set: { used: true, family } },
      )
      .lean()
      .exec();
  }

  async findCode(scope: ClientScope, hash: string): Promise<AuthCodeDoc | null> {
    return this.codes
      .findOne({ _id: grantKey(scope, hash) })
      .lean()
      .exec();
  }

  async insertRefreshToken(scope: ClientScope, token: NewRefreshToken): Promise<void> {
    await this.refreshTokens.create({
      ...token,
      _id: grantKey(scope, token._id),
      ...clientFilter(scope),
      used: false,
      revoked: false,
    });
  }

  /** Marks a live (unused, unrevoked, unexpired) refresh token used in one conditional write; returns it as it was, or null. */
  async consumeRefreshToken(scope: ClientScope, hash: string): Promise<RefreshTokenDoc | null> {
    return this.refreshTokens
      .findOneAndUpdate(
        { _id: grantKey(scope, hash), used: false, revoked: false, expiresAt: { $gt: new Date() } },
        { $set: { used: true } },
      )
      .lean()
      .exec();
  }

  async findRefreshToken(scope: ClientScope, hash: string): Promise<RefreshTokenDoc | null> {
    return this.refreshTokens
      .findOne({ _id: grantKey(scope, hash) })
      .lean()
      .exec();
  }

  /**
   * Revokes a family: its refresh tokens, and (recorded until `accessTokensUntil`, when the last
   * access token issued with it expires) the access tokens that carry it. The record goes first:
   * a crash in between leaves the refresh tokens usable, never an access token unrecalled.
   */
  async revokeFamily(scope: ClientScope, family: string, accessTokensUntil: Date): Promise<number> {
    await this.revokedFamilies
      .updateOne(
        { _id: grantKey(scope, family) },
        { $set: { expiresAt: accessTokensUntil }, $setOnInsert: clientFilter(scope) },
        { upsert: true },
      )
      .exec();
    const r = await this.refreshTokens
      .updateMany({ ...clientFilter(scope), family }, { $set: { revoked: true } })
      .exec();
    return r.modifiedCount;
  }

  async isFamilyRevoked(scope: ClientScope, family: string): Promise<boolean> {
    return (await this.revokedFamilies.exists({ _id: grantKey(scope, family) }).exec()) !== null;
  }
}
