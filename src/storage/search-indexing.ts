import { Logger } from '@nestjs/common';
import type { FhirVersion } from '@app/fhir';
import { extractIndex, type ExtractIndexOptions } from '@app/fhir/search/index-extraction';

const logger = new Logger('SearchIndexing');

/**
 * The `idx` stored on each current document (docs/storage.md), extracted at write time by the
 * search lib. An extraction fault must not lose a valid write: the resource is stored without
 * index entries (logged; `store reindex` rebuilds them) rather than answering 500. `options`: the
 * deployment's full-text setting (`Settings.fullText`).
 */
export function searchIndexOf(
  version: FhirVersion,
  resource: Record<string, unknown>,
  options: ExtractIndexOptions,
): object | undefined {
  try {
    return extractIndex(version, resource, options);
  } catch (error) {
    logger.error({ err: error, type: resource.resourceType }, 'search index extraction failed');
    return undefined;
  }
}
