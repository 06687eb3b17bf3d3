import { Injectable } from '@nestjs/common';
import { InjectModel } from '@nestjs/mongoose';
import type { Model } from 'mongoose';
import { ClientScope, clientFilter } from '../../../tenancy/tenant-context';
import { AuthCodeDoc, RefreshTokenDoc } from './grant.schemas';

/**
 * `_id` = `${client_id}|${sha256}`: the client is part of the key, so every lookup is one `_id`
 * equality (the filter FerretDB's SQLite backend pushes down) and another client's code or
 * token simply does not exist under this client's key.
 */
function grantKey(scope: ClientScope, hash: string): string {
  return `${clientFilter(scope).c}|${hash}`;
}

export type NewAuthCode = Omit<AuthCodeDoc, 'c' | 'used' | 'family'>;
export type NewRefreshToken = Omit<RefreshTokenDoc, 'c' | 'used' | 'revoked'>;

/** The only code touching `auth_codes` and `refresh_tokens`; every query is scoped to one client. */
@Injectable()
export class GrantsRepository {
  constructor(
    @InjectModel(AuthCodeDoc.name) private readonly codes: Model<AuthCodeDoc>,
    @InjectModel(RefreshTokenDoc.name) private readonly refreshTokens: Model<RefreshTokenDoc>,
  ) {}

  async insertCode(scope: ClientScope, code: NewAuthCode): Promise<void> {
    await this.codes.create({ ...code, _id: grantKey(scope, code._id), ...clientFilter(scope), used: false });
  }

  /**
   * Marks the code used (recording the token family it starts) in one atomic update and returns it as it was, or null when no unused
   * code of this client has this hash (unknown, another client's, or already used).
   */
  async consumeCode(scope: ClientScope, hash: string, family: string): Promise<AuthCodeDoc | null> {
    return this.codes
      .findOneAndUpdate({ _id: grantKey(scope, hash), used: false }, { $set: { used: true, family } })
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

  /** Atomically marks a live refresh token used; returns it as it was, or null. */
  async consumeRefreshToken(scope: ClientScope, hash: string): Promise<RefreshTokenDoc | null> {
    return this.refreshTokens
      .findOneAndUpdate({ _id: grantKey(scope, hash), used: false, revoked: false }, { $set: { used: true } })
      .lean()
      .exec();
  }

  async findRefreshToken(scope: ClientScope, hash: string): Promise<RefreshTokenDoc | null> {
    return this.refreshTokens
      .findOne({ _id: grantKey(scope, hash) })
      .lean()
      .exec();
  }

  async revokeFamily(scope: ClientScope, family: string): Promise<number> {
    const r = await this.refreshTokens
      .updateMany({ ...clientFilter(scope), family }, { $set: { revoked: true } })
      .exec();
    return r.modifiedCount;
  }

  /** Housekeeping across all clients (not a tenant query): removes expired codes and tokens. */
  async deleteExpired(now: Date): Promise<number> {
    const [codes, tokens] = await Promise.all([
      this.codes.deleteMany({ expiresAt: { $lt: now } }).exec(),
      this.refreshTokens.deleteMany({ expiresAt: { $lt: now } }).exec(),
    ]);
    return codes.deletedCount + tokens.deletedCount;
  }
}
