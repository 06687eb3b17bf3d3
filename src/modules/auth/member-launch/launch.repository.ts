import { Injectable } from '@nestjs/common';
import { InjectModel } from '@nestjs/mongoose';
import type { Model } from 'mongoose';
import {
  LaunchCredentialDoc,
  LaunchGrantDoc,
  LaunchTransactionDoc,
  MemberSessionDoc,
} from './launch.schemas';

export type NewCredential = Omit<LaunchCredentialDoc, '_id' | 'used'>;

/** The key of a code or refresh token: the presenting app is part of it (another app's finds nothing). */
export function credentialKey(app: string, hash: string): string {
  return `${app}|${hash}`;
}

/**
 * The only code touching the SMART App Launch collections. Transactions, sessions and grants are
 * looked up by their random `_id`; grants listed by (plan, member).
 */
@Injectable()
export class LaunchRepository {
  constructor(
    @InjectModel(LaunchTransactionDoc.name) private readonly txs: Model<LaunchTransactionDoc>,
    @InjectModel(MemberSessionDoc.name) private readonly sessions: Model<MemberSessionDoc>,
    @InjectModel(LaunchGrantDoc.name) private readonly grants: Model<LaunchGrantDoc>,
    @InjectModel(LaunchCredentialDoc.name) private readonly credentials: Model<LaunchCredentialDoc>,
  ) {}

  async insertTransaction(tx: LaunchTransactionDoc): Promise<void> {
    await this.txs.create(tx);
  }

  findTransaction(id: string): Promise<LaunchTransactionDoc | null> {
    return this.txs
      .findOne({ _id: id, expiresAt: { $gt: new Date() } })
      .lean()
      .exec();
  }

  async setTransactionMember(id: string, userId: number): Promise<void> {
    await this.txs.updateOne({ _id: id }, { $set: { u: userId } }).exec();
  }

  /** Ends a transaction (decided): returns it as it was, or null when already ended (one decision only). */
  takeTransaction(id: string): Promise<LaunchTransactionDoc | null> {
    return this.txs
      .findOneAndDelete({ _id: id, expiresAt: { $gt: new Date() } })
      .lean()
      .exec();
  }

  async insertSession(session: MemberSessionDoc): Promise<void> {
    await this.sessions.create(session);
  }

  findSession(hash: string): Promise<MemberSessionDoc | null> {
    return this.sessions
      .findOne({ _id: hash, expiresAt: { $gt: new Date() } })
      .lean()
      .exec();
  }

  async deleteSession(hash: string): Promise<void> {
    await this.sessions.deleteOne({ _id: hash }).exec();
  }

  async insertGrant(grant: LaunchGrantDoc): Promise<void> {
    await this.grants.create(grant);
  }

  findGrant(id: string): Promise<LaunchGrantDoc | null> {
    return this.grants.findOne({ _id: id }).lean().exec();
  }

  /** The member's live grants, newest first. */
  memberGrants(plan: string, userId: number): Promise<LaunchGrantDoc[]> {
    return this.grants
      .find({ plan, u: userId, revoked: false })
      .sort({ created: -1 })
      .limit(200)
      .lean()
      .exec();
  }

  /**
   * Revokes a grant, then its refresh tokens: the grant record first, so a crash in between leaves
   * nothing usable (tokens are checked against the grant). `owner` limits it to a member's or an app's own.
   */
  async revokeGrant(id: string, owner: { plan: string; u: number } | { app: string }): Promise<boolean> {
    const r = await this.grants.updateOne({ _id: id, ...owner }, { $set: { revoked: true } }).exec();
    if (r.matchedCount === 0) return false;
    await this.credentials.updateMany({ grant: id }, { $set: { used: true } }).exec();
    return true;
  }

  async insertCredential(app: string, hash: string, credential: NewCredential): Promise<void> {
    await this.credentials.create({ ...credential, _id: credentialKey(app, hash), used: false });
  }

  /**
   * Marks a live code or refresh token used in one conditional write and returns it as it was;
   * null when unknown, another app's, expired or used (of racing requests exactly one wins).
   */
  consumeCredential(
    app: string,
    hash: string,
    kind: 'code' | 'refresh',
  ): Promise<LaunchCredentialDoc | null> {
    return this.credentials
      .findOneAndUpdate(
        { _id: credentialKey(app, hash), kind, used: false, expiresAt: { $gt: new Date() } },
        { $set: { used: true } },
      )
      .lean()
      .exec();
  }

  findCredential(app: string, hash: string): Promise<LaunchCredentialDoc | null> {
    return this.credentials
      .findOne({ _id: credentialKey(app, hash) })
      .lean()
      .exec();
  }
}
