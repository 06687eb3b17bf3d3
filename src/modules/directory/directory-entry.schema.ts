import { Schema } from 'mongoose';
import { ENTRY_STATUSES, SYSTEM_TYPES } from './directory-entry';

export const DIRECTORY_ENTRY_MODEL = 'DirectoryEntry';

/** Stored form of a directory entry (`directory_entries`). The directory is global, not tenant data. */
export interface DirectoryEntryDocument {
  /** The entry id (import key). */
  _id: string;
  name: string;
  system_type: string;
  address: { line: string[]; city: string | null; state: string | null; postalCode: string | null };
  ehr: string | null;
  fhir_base_url: string | null;
  logo: string | null;
  status: string;
  /** Folded name: the result order (then `_id`). */
  sort_name: string;
  /** Folded words of name, address.line and address.city (checks query words longer than the prefixes). */
  words: string[];
  /** Every 1..15-character prefix of `words`: query words match by equality (see searchPrefixes). */
  prefixes: string[];
  created_at: Date;
  updated_at: Date;
}

export const DirectoryEntrySchema = new Schema<DirectoryEntryDocument>(
  {
    _id: { type: String, required: true },
    name: { type: String, required: true },
    system_type: { type: String, required: true, enum: SYSTEM_TYPES },
    address: {
      line: { type: [String], default: [] },
      city: { type: String, default: null },
      state: { type: String, default: null },
      postalCode: { type: String, default: null },
    },
    ehr: { type: String, default: null },
    fhir_base_url: { type: String, default: null },
    logo: { type: String, default: null },
    status: { type: String, required: true, enum: ENTRY_STATUSES },
    sort_name: { type: String, required: true },
    words: { type: [String], default: [] },
    prefixes: { type: [String], default: [] },
    created_at: { type: Date, required: true },
    updated_at: { type: Date, required: true },
  },
  { collection: 'directory_entries', versionKey: false, _id: false },
);

// Search with words: equality on one prefix (the longest query word), rows already in name order,
// so a page stops after offset+20 index entries. With and without a system_type filter.
DirectoryEntrySchema.index({ status: 1, prefixes: 1, sort_name: 1, _id: 1 });
DirectoryEntrySchema.index({ status: 1, system_type: 1, prefixes: 1, sort_name: 1, _id: 1 });
// Search without words (browse all, clinical list without a name filter).
DirectoryEntrySchema.index({ status: 1, sort_name: 1, _id: 1 });
DirectoryEntrySchema.index({ status: 1, system_type: 1, sort_name: 1, _id: 1 });
