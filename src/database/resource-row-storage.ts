import type { EngineSettings } from '../config/settings';

/**
 * How the embedded engine stores the rows of `resources` collections (docs/storage.md "Storage,
 * not queries").
 *
 * PostgreSQL compresses a row over ~2 KB (TOAST), and DocumentDB decompresses a stored document
 * again for every condition, sort key and projected field it evaluates on it outside an index, so
 * a search pays that per candidate and per call. `plain` keeps rows up to a page (8,160 bytes)
 * uncompressed in the table (`toast_tuple_target`): searches read them in place; larger documents
 * are still compressed. `compressed` is PostgreSQL's default (about a third less disk for
 * `resources`). Only `resources` is stored plain: it is what every search and read filters; the
 * history and the other collections are read by key.
 */
export type ResourceRowStorage = EngineSettings['resourceRows'];

/** toast_tuple_target's largest value (BLCKSZ 8192 less the page header). */
const WHOLE_PAGE = 8160;

const COLLECTION = 'resources';
const TRIGGER = 'fhir_resource_row_storage';

/**
 * Statements run as the engine's superuser at every start (idempotent): an event trigger sets the
 * storage of every `resources` table DocumentDB creates from now on (a collection's table is
 * created with its first document or index, when the catalog names it already), and the tables
 * of existing `resources` collections get it now. A table's setting applies to the rows written
 * from then on (`store reindex` rewrites every row).
 */
export function resourceRowStorageSql(storage: ResourceRowStorage): string {
  const setting =
    storage === 'plain' ? `SET (toast_tuple_target = ${WHOLE_PAGE})` : 'RESET (toast_tuple_target)';
  return `${storage === 'plain' ? newTablesSql(setting) : `DROP EVENT TRIGGER IF EXISTS ${TRIGGER};`}
DO $existing$
DECLARE id bigint;
BEGIN
  FOR id IN SELECT collection_id FROM documentdb_api_catalog.collections
      WHERE collection_name = '${COLLECTION}' LOOP
    IF to_regclass('documentdb_data.documents_' || id) IS NOT NULL THEN
      EXECUTE format('ALTER TABLE documentdb_data.documents_%s ${setting}', id);
    END IF;
  END LOOP;
END $existing$;`;
}

function newTablesSql(setting: string): string {
  return `
CREATE OR REPLACE FUNCTION public.${TRIGGER}() RETURNS event_trigger LANGUAGE plpgsql AS $fn$
DECLARE created record;
BEGIN
  FOR created IN SELECT object_identity FROM pg_event_trigger_ddl_commands()
      WHERE command_tag = 'CREATE TABLE' AND schema_name = 'documentdb_data' LOOP
    IF EXISTS (SELECT 1 FROM documentdb_api_catalog.collections
        WHERE collection_name = '${COLLECTION}'
          AND 'documentdb_data.documents_' || collection_id = created.object_identity) THEN
      EXECUTE format('ALTER TABLE %s ${setting}', created.object_identity);
    END IF;
  END LOOP;
END $fn$;
DROP EVENT TRIGGER IF EXISTS ${TRIGGER};
CREATE EVENT TRIGGER ${TRIGGER} ON ddl_command_end WHEN TAG IN ('CREATE TABLE')
  EXECUTE FUNCTION public.${TRIGGER}();`;
}
