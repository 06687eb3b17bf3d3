import type { Schema } from 'mongoose';

/** A TTL index a schema declared (`schema.index({ field: 1 }, { expireAfterSeconds })`). */
export interface TtlIndex {
  field: string;
  expireAfterSeconds: number;
}

/** Schemas are module-level singletons shared by every app of a process (tests build many). */
const strippedTtl = new WeakMap<Schema, TtlIndex[]>();

/**
 * Applied to every schema of the connection:
 * - turns Mongoose's fire-and-forget autoIndex off, so that indexes are created once, awaited, at
 *   start-up by DatabaseLifecycle (a failure stops the boot instead of surfacing later);
 * - takes TTL options out of the declared indexes and remembers them, because FerretDB 1.x rejects
 *   `expireAfterSeconds` ("not implemented yet"): DatabaseLifecycle creates real TTL indexes on
 *   MongoDB and runs a periodic sweeper on FerretDB instead.
 */
export function indexPlugin(schema: Schema): void {
  schema.set('autoIndex', false);
  ttlIndexesOf(schema);
}

export function ttlIndexesOf(schema: Schema): TtlIndex[] {
  const known = strippedTtl.get(schema);
  if (known) return known;
  const found: TtlIndex[] = [];
  const declared = (schema as unknown as { _indexes: [Record<string, unknown>, Record<string, unknown>?][] })
    ._indexes;
  for (const [fields, options] of declared) {
    if (options && typeof options.expireAfterSeconds === 'number') {
      found.push({ field: Object.keys(fields)[0], expireAfterSeconds: options.expireAfterSeconds });
      delete options.expireAfterSeconds;
    }
  }
  strippedTtl.set(schema, found);
  return found;
}
