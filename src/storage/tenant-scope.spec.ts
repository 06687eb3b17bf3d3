import type { mongo } from 'mongoose';
import type { TenantContext } from '../tenancy/tenant-context';
import type { ResourceDoc } from './documents';
import { asOwner, clientScope, clientWide, ScopedCollection, type ScopedFilter } from './tenant-scope';

const user: TenantContext = { clientId: 'client-a', userId: 7, scopes: ['user/*.*'], form: 'user-token' };
const client: TenantContext = { ...user, userId: null, form: 'client-token' };

/** A driver collection that records what reaches it (the scope's logic is pure up to that point). */
function recordingCollection() {
  const calls: Array<{ method: string; args: unknown[] }> = [];
  const collection = new Proxy(
    {},
    {
      get:
        (_target, method: string) =>
        (...args: unknown[]) =>
          void calls.push({ method, args }),
    },
  ) as unknown as mongo.Collection<ResourceDoc>;
  return { collection, calls };
}

function doc(c: string, u: number): ResourceDoc {
  return {
    _id: `r4|${c}|Patient|1`,
    v: 'r4',
    c,
    u,
    t: 'Patient',
    id: '1',
    vid: 1,
    lu: new Date(0),
    del: false,
    json: '{}',
  };
}

describe('ScopedCollection', () => {
  it('scopes to one user, or to the client when client-wide', () => {
    const { collection } = recordingCollection();
    expect(new ScopedCollection(collection, { ...user, clientId: 'c1' }).where()).toEqual({ c: 'c1', u: 7 });
    expect(new ScopedCollection(collection, { ...client, clientId: 'c1' }).where()).toEqual({ c: 'c1' });
  });

  it('puts the conditions first, the tenant keys next, then the rest (DocumentDB tests them in this order)', () => {
    const { collection } = recordingCollection();
    const filter = new ScopedCollection(collection, user).where({ t: 'Patient' }, { del: false });
    expect(Object.entries(filter)).toEqual([
      ['t', 'Patient'],
      ['c', 'client-a'],
      ['u', 7],
      ['del', false],
    ]);
    expect(new ScopedCollection(collection, client).where({ _id: 'k' })).toEqual({ _id: 'k', c: 'client-a' });
  });

  it('keeps the tenant keys even when a condition names them at runtime', () => {
    const { collection } = recordingCollection();
    const sneaky = { c: 'client-b', u: 8 } as unknown as Record<string, never>;
    expect(new ScopedCollection(collection, user).where(sneaky, sneaky)).toEqual({ c: 'client-a', u: 7 });
  });

  it('refuses a document of another client or user, and writes one of its own', async () => {
    const { collection, calls } = recordingCollection();
    const scoped = new ScopedCollection(collection, user);
    expect(() => scoped.insertIgnoringDuplicates([doc('client-b', 7)])).toThrow(/does not belong/);
    expect(() => scoped.insertIgnoringDuplicates([doc('client-a', 8)])).toThrow(/does not belong/);
    expect(calls).toEqual([]);
    await scoped.insertIgnoringDuplicates([doc('client-a', 7)]);
    expect(calls.map((call) => call.method)).toEqual(['insertMany']);
    // the client as a whole may write for any of its users
    await new ScopedCollection(collection, client).insertIgnoringDuplicates([doc('client-a', 8)]);
    expect(calls).toHaveLength(2);
  });

  it('asks for a read with a limit in one reply, unless the caller sized its batches', () => {
    const { collection, calls } = recordingCollection();
    const scoped = new ScopedCollection(collection, user);
    scoped.find(scoped.where(), { limit: 3750, projection: { _id: 1 } });
    scoped.find(scoped.where(), { limit: 3750, batchSize: 100 });
    scoped.find(scoped.where());
    expect(calls.map((call) => call.args[1])).toEqual([
      { limit: 3750, projection: { _id: 1 }, batchSize: 3750 },
      { limit: 3750, batchSize: 100 },
      {},
    ]);
  });

  it('takes only filters that carry the tenant keys (checked by the compiler)', () => {
    const { collection, calls } = recordingCollection();
    const scoped = new ScopedCollection(collection, user);
    // @ts-expect-error an empty filter has no tenant keys
    void scoped.findOne({});
    // @ts-expect-error nor has a hand-written one that names a client
    void scoped.deleteMany({ _id: 'k', c: 'client-a' });
    // @ts-expect-error a condition may not set the tenant keys itself
    scoped.where({ c: 'client-b' });
    const scopedFilter: ScopedFilter<ResourceDoc> = { ...scoped.where({ _id: 'k' }), del: false };
    void scoped.findOne(scopedFilter);
    expect(calls.map((call) => call.method)).toEqual(['findOne', 'deleteMany', 'findOne']);
  });

  it('does not let a later key of a scoped filter name another tenant (checked by the compiler)', () => {
    const { collection } = recordingCollection();
    const scoped = new ScopedCollection(collection, user);
    // @ts-expect-error a plain string is not a tenant key: the client cannot be set again
    const otherClient: ScopedFilter<ResourceDoc> = { ...scoped.where({ _id: 'k' }), c: 'client-b' };
    // @ts-expect-error nor can the user
    const otherUser: ScopedFilter<ResourceDoc> = { ...scoped.where({ _id: 'k' }), u: 8 };
    // @ts-expect-error a filter of one collection's documents is no filter of another's
    const otherDocs: ScopedFilter<{ _id: string; c: string; n: number }> = scoped.where();
    expect([otherClient, otherUser, otherDocs]).toHaveLength(3);
  });

  it('sends its own tenant keys whatever a filter forced past the compiler says, and freezes what it builds', async () => {
    const { collection, calls } = recordingCollection();
    const scoped = new ScopedCollection(collection, user);
    const forced = {
      ...scoped.where({ _id: 'k' }),
      c: 'client-b',
      u: undefined,
    } as unknown as ScopedFilter<ResourceDoc>;
    void scoped.findOne(forced);
    await scoped.deleteMany(forced);
    await scoped.updateOne(forced, { $set: { del: true } });
    await scoped.deleteEach([forced]).catch(() => undefined); // the recording driver answers nothing
    expect(calls.map((call) => call.args[0])).toEqual([
      { _id: 'k', c: 'client-a', u: 7 },
      { _id: 'k', c: 'client-a', u: 7 },
      { _id: 'k', c: 'client-a', u: 7 },
      [{ deleteMany: { filter: { _id: 'k', c: 'client-a', u: 7 } } }],
    ]);
    const built = scoped.where({ _id: 'k' });
    expect(Object.isFrozen(built)).toBe(true);
    expect(() => Object.assign(built, { c: 'client-b' })).toThrow(TypeError);
  });

  it('names its widenings: the whole client of a user, another user of the same client', () => {
    expect(clientWide(user)).toEqual({ ...user, userId: null });
    expect(clientWide(client)).toBe(client);
    expect(asOwner(user, 9)).toEqual({ ...user, userId: 9 });
    expect(asOwner(user, 7)).toBe(user);
    expect(clientScope(user)).toEqual({ clientId: 'client-a', userId: null });
  });

  it("scopes client-owned records by the client only, and refuses another client's", async () => {
    const { collection, calls } = recordingCollection();
    const records = new ScopedCollection(collection, clientScope(user));
    expect(records.where({ _id: 'k' })).toEqual({ _id: 'k', c: 'client-a' });
    expect(() => records.insertOne(doc('client-b', 7))).toThrow(/does not belong/);
    await records.insertOne(doc('client-a', 8));
    await records.findOneAndUpdate(records.where({ _id: 'k' }), { $set: { del: true } });
    expect(calls.map((call) => [call.method, call.args[0]])).toEqual([
      ['insertOne', doc('client-a', 8)],
      ['findOneAndUpdate', { _id: 'k', c: 'client-a' }],
    ]);
  });
});
