import type { Schema } from 'mongoose';

/**
 * Applied to every schema of the connection: turns Mongoose's fire-and-forget autoIndex off, so
 * that indexes are created once, awaited, at start-up by DatabaseLifecycle (a failure stops the
 * boot instead of surfacing later).
 */
export function indexPlugin(schema: Schema): void {
  schema.set('autoIndex', false);
}
