import { Logger } from '@nestjs/common';
import type { FhirVersion } from '@app/fhir';
import { extractIndex, type ExtractIndexOptions } from '@app/fhir/search/index-extraction';
import type { Settings } from '../config/settings';

const logger = new Logger('SearchIndexing');

/**
 * The `idx` stored on each current document (docs/storage.md), extracted at write time by the
 * search lib. An extraction fault must not lose a valid write: the resource is stored without
 * index entries (logged; `store reindex` rebuilds them) rather than answering 500.
 */
export function searchIndexOf(
  version: FhirVersion,
  resource: Record<string, unknown>,
  settings: IndexSettings,
): object | undefined {
  try {
    return extractIndex(version, resource, indexOptions(settings));
  } catch (error) {
    logger.error({ err: error, type: resource.resourceType }, 'search index extraction failed');
    return undefined;
  }
}

/** The deployment settings the stored index depends on. */
export type IndexSettings = Pick<Settings, 'fullText' | 'urls'>;

/**
 * The extraction options of this deployment, the one place they are derived (writes, `store
 * reindex`, the start-up pass of local-references.ts): full text on or off, and the service base
 * whose references are stored relative.
 */
export function indexOptions(settings: IndexSettings): ExtractIndexOptions {
  return { fullText: settings.fullText, serviceBase: settings.urls.base };
}
