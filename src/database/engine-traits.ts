import type { Connection } from 'mongoose';

/**
 * What the connected engine can do, asked once per connection (`buildInfo`). FerretDB 1.x hands
 * only a filter of exactly `{_id: x}` to its storage (an index search with the fix of
 * docs/ferretdb.md); any other filter, `{_id: {$in}}` included, is a scan of the collection. Code
 * that would scan per batch there deletes or reads by `_id`, one document at a time, instead.
 */
export interface EngineTraits {
  /** FerretDB 1.x: only `{_id: x}` is answered from an index. */
  onlyIdLookupsIndexed: boolean;
}

const traitsByConnection = new WeakMap<Connection, Promise<EngineTraits>>();

export function engineTraits(connection: Connection): Promise<EngineTraits> {
  let traits = traitsByConnection.get(connection);
  if (!traits) {
    traits = connection
      .db!.admin()
      .command({ buildInfo: 1 })
      .then((info) => ({ onlyIdLookupsIndexed: Boolean(info.ferretdbVersion) }));
    // A failed probe (database down) is asked again next time.
    traits.catch(() => traitsByConnection.delete(connection));
    traitsByConnection.set(connection, traits);
  }
  return traits;
}
