import { Injectable } from '@nestjs/common';
import { InjectModel } from '@nestjs/mongoose';
import type { Model, mongo } from 'mongoose';
import type { ClientScope, TenantContext } from '../../tenancy/tenant-context';
import { CounterDoc, UserDoc, UserRecord } from './user.schema';
import { isDuplicateKey } from '../../storage/duplicate-key';
import { clientScope, type Conditions, ScopedCollection } from '../../storage/tenant-scope';

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

  /** The client's users (a user-level context sees only its own: `list`). */
  private scoped(scope: ClientScope): ScopedCollection<UserDoc> {
    return new ScopedCollection(
      this.users.collection as unknown as mongo.Collection<UserDoc>,
      clientScope(scope),
    );
  }

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
      c: scope.clientId,
      app_user_id: user.appUserId,
      active: true,
      created: new Date(),
    };
    await this.scoped(scope).insertOne(doc);
    return toRecord(doc);
  }

  async findById(scope: ClientScope, serviceUserId: number): Promise<UserRecord | null> {
    const users = this.scoped(scope);
    const doc = await users.findOne(users.where({ _id: serviceUserId }));
    return doc ? toRecord(doc) : null;
  }

  async findByAppUserId(scope: ClientScope, appUserId: string): Promise<UserRecord | null> {
    const users = this.scoped(scope);
    const doc = await users.findOne(users.where({}, { app_user_id: appUserId }));
    return doc ? toRecord(doc) : null;
  }

  /** The users a context may see: the client's, or only its own user for a user-level context. */
  async list(ctx: TenantContext, q: UserListQuery): Promise<{ users: UserRecord[]; total: number }> {
    // a user-level context's user is the user document itself (its `_id`)
    const own = ctx.userId ?? undefined;
    if (own !== undefined && q.serviceUserId !== undefined && q.serviceUserId !== own)
      return { users: [], total: 0 };
    const conditions: Conditions<UserDoc> = {};
    const id = own ?? q.serviceUserId;
    if (id !== undefined) conditions._id = id;
    if (q.appUserId !== undefined) conditions.app_user_id = q.appUserId;
    const users = this.scoped(ctx);
    const filter = users.where({}, conditions);
    const [docs, total] = await Promise.all([
      users.find(filter, { sort: { _id: 1 }, skip: q.offset, limit: q.limit }).toArray(),
      users.countDocuments(filter),
    ]);
    return { users: docs.map(toRecord), total };
  }

  /** Sets a member's sign-in secret hash; null when no such user in this client. */
  async setSignInHash(scope: ClientScope, appUserId: string, hash: string): Promise<UserRecord | null> {
    const users = this.scoped(scope);
    const doc = await users.findOneAndUpdate(
      users.where({}, { app_user_id: appUserId }),
      { $set: { sign_in_hash: hash } },
      { returnDocument: 'after' },
    );
    return doc ? toRecord(doc) : null;
  }

  /** The member and their sign-in secret hash (absent: none set), or null when no such user. */
  async findSignIn(
    scope: ClientScope,
    appUserId: string,
  ): Promise<{ user: UserRecord; signInHash?: string } | null> {
    const users = this.scoped(scope);
    const doc = await users.findOne(users.where({}, { app_user_id: appUserId }));
    return doc ? { user: toRecord(doc), signInHash: doc.sign_in_hash } : null;
  }

  /** Renames; null when no such user in this client. A taken name throws E11000. */
  async rename(scope: ClientScope, serviceUserId: number, appUserId: string): Promise<UserRecord | null> {
    const users = this.scoped(scope);
    const doc = await users.findOneAndUpdate(
      users.where({ _id: serviceUserId }),
      { $set: { app_user_id: appUserId } },
      { returnDocument: 'after' },
    );
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
