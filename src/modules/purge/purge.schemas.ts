import { Schema } from 'mongoose';

/**
 * Purge's view of the two resource collections of docs/storage.md: only the fields it filters on
 * or reads back (the FHIR store owns the full shape), plus the indexes its batches need. An index
 * the FHIR store also creates is declared with the store's key and name, so either creates it and
 * the other finds it there (same key, other name would be an error at start-up).
 */
export const PURGE_RESOURCE_MODEL = 'PurgeResourceKey';
export const PURGE_HISTORY_MODEL = 'PurgeHistoryRow';

export interface PurgeResourceDoc {
  _id: string;
  v: string;
  c: string;
  u: number;
  t: string;
  vid: number;
  lu: Date;
}

export interface PurgeHistoryDoc {
  _id: string;
  rk: string;
  v: string;
  c: string;
  u: number;
  t: string;
  lu: Date;
}

const viewOptions = { versionKey: false, strict: false, autoIndex: false } as const;

export const PurgeResourceSchema = new Schema<PurgeResourceDoc>(
  {
    _id: String,
    v: String,
    c: String,
    u: Number,
    t: String,
    vid: Number,
    lu: Date,
  },
  { ...viewOptions, collection: 'resources' },
);
// Per-user scans in (type, key) order: a purge batch is a covered read of the next keys.
export const USER_TYPE_INDEX = 'user_type';
PurgeResourceSchema.index({ v: 1, c: 1, u: 1, t: 1, _id: 1 }, { name: USER_TYPE_INDEX });

export const PurgeHistorySchema = new Schema<PurgeHistoryDoc>(
  {
    _id: String,
    rk: String,
    v: String,
    c: String,
    u: Number,
    t: String,
    lu: Date,
  },
  { ...viewOptions, collection: 'resource_history' },
);
// Removing every version of a batch of resources (`rk ∈ keys`, within the user), and finding the
// user's history rows left without a current document, in resource-key order.
PurgeHistorySchema.index({ v: 1, c: 1, u: 1, rk: 1 }, { name: 'user_history' });
