import { Injectable } from '@nestjs/common';
import { InjectModel } from '@nestjs/mongoose';
import type { Model } from 'mongoose';
import { ClientScope, clientFilter, TenantContext, tenantFilter } from '../../tenancy/tenant-context';
import { CounterDoc, UserDoc, UserRecord } from './user.schema';
import { isDuplicateKey } from '../../storage/duplicate-key';

const SERVICE_USER_ID_COUNTER = 'service_user_id';

export interface UserListQuery {
  appUserId?: string;
  serviceUserId?: number;
  limit: number;
  offset: number;
}

/** The only code touching `users` and `counters`. Every user query is scoped to one client. */
@Injectable()
export class UsersRepository {
  constructor(
    @InjectModel(UserDoc.name) private readonly users: Model<UserDoc>,
    @InjectModel(CounterDoc.name) private readonly counters: Model<CounterDoc>,
  ) {}

  /** The next service_user_id: one atomic `$inc`; an id is never handed out twice. */
  async nextServiceUserId(): Promise<number> {
    const bump = () =>
      this.counters
        .findOneAndUpdate({ _id: SERVICE_USER_ID_COUNTER }, { $inc: { seq: 1 } }, { upsert: true, new: true })
        .lean()
        .exec();
    // The very first upserts may race on the counter's _id; the loser retries as an update.
    const doc = await bump().catch((e: { code?: number }) => {
      if (isDuplicateKey(e)) return bump();
      throw e;
    });
    return doc.seq;
  }

  /** Inserts; a duplicate (client, app_user_id) throws the driver's E11000. */
  async insert(scope: ClientScope, user: { serviceUserId: number; appUserId: string }): Promise<UserRecord> {
    const doc: UserDoc = {
      _id: user.serviceUserId,
      ...clientFilter(scope),
      app_user_id: user.appUserId,
      active: true,
      created: new Date(),
    };
    await this.users.create(doc);
    return toRecord(doc);
  }

  async findById(scope: ClientScope, serviceUserId: number): Promise<UserRecord | null> {
    const doc = await this.users
      .findOne({ _id: serviceUserId, ...clientFilter(scope) })
      .lean()
      .exec();
    return doc ? toRecord(doc) : null;
  }

  async findByAppUserId(scope: ClientScope, appUserId: string): Promise<UserRecord | null> {
    const doc = await this.users
      .findOne({ ...clientFilter(scope), app_user_id: appUserId })
      .lean()
      .exec();
    return doc ? toRecord(doc) : null;
  }

  /** The users a context may see: the client's, or only its own user for a user-level context. */
  async list(ctx: TenantContext, q: UserListQuery): Promise<{ users: UserRecord[]; total: number }> {
    const { c, u } = tenantFilter(ctx);
    const filter: Record<string, unknown> = { c };
    if (u !== undefined && q.serviceUserId !== undefined && q.serviceUserId !== u)
      return { users: [], total: 0 };
    if (u !== undefined || q.serviceUserId !== undefined) filter._id = u ?? q.serviceUserId;
    if (q.appUserId !== undefined) filter.app_user_id = q.appUserId;
    const [docs, total] = await Promise.all([
      this.users.find(filter).sort({ _id: 1 }).skip(q.offset).limit(q.limit).lean().exec(),
      this.users.countDocuments(filter).exec(),
    ]);
    return { users: docs.map(toRecord), total };
  }

  /** Sets a member's sign-in secret hash; null when no such user in this client. */
  async setSignInHash(scope: ClientScope, appUserId: string, hash: string): Promise<UserRecord | null> {
    const doc = await this.users
      .findOneAndUpdate(
        { ...clientFilter(scope), app_user_id: appUserId },
        { $set: { sign_in_hash: hash } },
        { new: true },
      )
      .lean()
      .exec();
    return doc ? toRecord(doc) : null;
  }

  /** The member and their sign-in secret hash (absent: none set), or null when no such user. */
  async findSignIn(
    scope: ClientScope,
    appUserId: string,
  ): Promise<{ user: UserRecord; signInHash?: string } | null> {
    const doc = await this.users
      .findOne({ ...clientFilter(scope), app_user_id: appUserId })
      .lean()
      .exec();
    return doc ? { user: toRecord(doc), signInHash: doc.sign_in_hash } : null;
  }

  /** Renames; null when no such user in this client. A taken name throws E11000. */
  async rename(scope: ClientScope, serviceUserId: number, appUserId: string): Promise<UserRecord | null> {
    const doc = await this.users
      .findOneAndUpdate(
        { _id: serviceUserId, ...clientFilter(scope) },
        { $set: { app_user_id: appUserId } },
        { new: true },
      )
      .lean()
      .exec();
    return doc ? toRecord(doc) : null;
  }
}

function toRecord(doc: UserDoc): UserRecord {
  return {
    service_user_id: doc._id,
    app_user_id: doc.app_user_id,
    client_id: doc.c,
    active: doc.active !== false,
    created: doc.created,
  };
}
