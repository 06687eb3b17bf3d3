import { Injectable } from '@nestjs/common';
import { OperationOutcomeError, type FhirVersion } from '@app/fhir';
import type { TenantContext } from '../../tenancy/tenant-context';
import { ResourceRepository } from '../resource.repository';
import { idsFromReferences, withChainResults, type BuiltSearch } from './filter-builder';
import type { Filter } from './filter-clauses';

/**
 * Most resources one chain or `_has` step may match. A sub-query's matches come back as a list
 * that the main query then tests with `$in` (an index look-up per key): beyond this the search must
 * be narrowed (search.html#errors, too-costly).
 */
export const MAX_SUB_QUERY_MATCHES = 1000;

/**
 * Runs the sub-queries of chains (`subject:Patient.name=x`, search.html#chaining) and reverse
 * chains (`_has:Observation:patient:code=x`, search.html#has) in the caller's tenant scope, then
 * completes the main filter. A sub-query that matches nothing makes the whole search match nothing.
 */
@Injectable()
export class SubQueryResolver {
  constructor(private readonly repository: ResourceRepository) {}

  async resolve(ctx: TenantContext, version: FhirVersion, built: BuiltSearch): Promise<Filter> {
    if (built.chained.length === 0 && built.has.length === 0) return built.filter;
    const chained = await Promise.all(
      built.chained.map(async (query) => {
        const docs = await this.matches(
          ctx,
          version,
          query.filter,
          {},
          `chained parameter '${query.referenceParam}.…'`,
        );
        return docs.map((doc) => `${doc.t}/${doc.id}`);
      }),
    );
    const has = await Promise.all(
      built.has.map(async (query) => {
        const docs = await this.matches(ctx, version, query.filter, { 'idx.ref': 1 }, '_has');
        return idsFromReferences(
          query,
          docs.map((doc) => (doc.idx as { ref?: string[] } | undefined)?.ref),
        );
      }),
    );
    return withChainResults(built, { chained, has });
  }

  private async matches(
    ctx: TenantContext,
    version: FhirVersion,
    filter: Filter,
    projection: Record<string, 1>,
    what: string,
  ) {
    const docs = await this.repository.findFields(
      ctx,
      version,
      filter,
      projection,
      MAX_SUB_QUERY_MATCHES + 1,
    );
    if (docs.length > MAX_SUB_QUERY_MATCHES) {
      throw new OperationOutcomeError(
        'too-costly',
        `the ${what} matches more than ${MAX_SUB_QUERY_MATCHES} resources: narrow it`,
        { status: 400 },
      );
    }
    return docs;
  }
}
