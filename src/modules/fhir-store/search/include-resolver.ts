import { Injectable } from '@nestjs/common';
import { escapeRegex } from '@app/fhir/search/text-normalization';
import type { FhirVersion, IncludeDirective, ParsedSearch } from '@app/fhir';
import type { TenantContext } from '../../../tenancy/tenant-context';
import type { ResourceDoc } from '../../../storage/documents';
import { ResourceRepository, type ResourceRef, type SizedRef } from '../../../storage/resource.repository';
import { storeFilter } from './sub-query-resolver';

/** Most included resources considered for one page: `_include=*` on a page of 100 must stay bounded. */
export const MAX_INCLUDED = 1000;

const RELATIVE_TARGET = /^([A-Z][A-Za-z]+)\/([A-Za-z0-9\-.]{1,64})$/;

function follows(
  directive: IncludeDirective,
  sourceType: string,
  param: string,
  targetType: string,
): boolean {
  if (directive.targetType && directive.targetType !== targetType) return false;
  return directive.wildcard || (directive.sourceType === sourceType && directive.params.includes(param));
}

type Source = Pick<ResourceDoc, '_id' | 't' | 'id'>;

/**
 * `_include` / `_revinclude` (https://hl7.org/fhir/R4/search.html#include): the resources the
 * matches reference, and the resources that reference the matches, through the `idx.ref` entries
 * written at index time. Every look-up goes through the repository with the caller's tenant scope,
 * so an include can never reach another user's resource. `:iterate` directives run once more on
 * what the first level included (one extra level). Nothing is returned twice, and nothing that is
 * already a match.
 *
 * Two steps, so that the page byte budget decides before any JSON is read (docs/security.md
 * "Page byte budget"): `resolve` finds what would be included with each resource's JSON size
 * only (up to MAX_INCLUDED), `read` then fetches the JSON of those the page keeps.
 */
@Injectable()
export class IncludeResolver {
  constructor(private readonly repository: ResourceRepository) {}

  async resolve(
    ctx: TenantContext,
    version: FhirVersion,
    parsed: Pick<ParsedSearch, 'include' | 'revinclude'>,
    matches: readonly Source[],
    serviceBase: string,
  ): Promise<SizedRef[]> {
    if (parsed.include.length === 0 && parsed.revinclude.length === 0) return [];
    const seen = new Set(matches.map((doc) => doc._id));
    const included: SizedRef[] = [];
    const add = (docs: readonly SizedRef[]): SizedRef[] => {
      const fresh = docs.filter((doc) => !seen.has(doc._id));
      for (const doc of fresh) seen.add(doc._id);
      included.push(...fresh);
      return fresh;
    };
    const localPrefix = `${serviceBase}/${version}/`;
    const firstLevel = add(
      await this.level(ctx, version, parsed.include, parsed.revinclude, matches, localPrefix),
    );
    const iterating = {
      include: parsed.include.filter((d) => d.iterate),
      revinclude: parsed.revinclude.filter((d) => d.iterate),
    };
    if (firstLevel.length > 0 && iterating.include.length + iterating.revinclude.length > 0) {
      add(await this.level(ctx, version, iterating.include, iterating.revinclude, firstLevel, localPrefix));
    }
    return included.slice(0, MAX_INCLUDED);
  }

  /** The current JSON of resolved inclusions, in their order (one deleted meanwhile is left out). */
  read(ctx: TenantContext, version: FhirVersion, refs: readonly SizedRef[]): Promise<ResourceDoc[]> {
    return this.repository.findByKeys(
      ctx,
      version,
      refs.map((ref) => ({ type: ref.t, id: ref.id })),
    );
  }

  private async level(
    ctx: TenantContext,
    version: FhirVersion,
    includes: readonly IncludeDirective[],
    revincludes: readonly IncludeDirective[],
    sources: readonly Source[],
    localPrefix: string,
  ): Promise<SizedRef[]> {
    const [forward, reverse] = await Promise.all([
      this.referenced(ctx, version, includes, sources, localPrefix),
      Promise.all(
        revincludes.map((directive) => this.referencing(ctx, version, directive, sources, localPrefix)),
      ),
    ]);
    return [...forward, ...reverse.flat()];
  }

  /** `_include`: the targets of the sources' reference parameters named by the directives. */
  private async referenced(
    ctx: TenantContext,
    version: FhirVersion,
    directives: readonly IncludeDirective[],
    sources: readonly Source[],
    localPrefix: string,
  ): Promise<SizedRef[]> {
    if (directives.length === 0 || sources.length === 0) return [];
    const withReferences = await this.repository.findFields(
      ctx,
      version,
      { _id: { $in: sources.map((doc) => doc._id) } },
      { 'idx.ref': 1 },
      sources.length,
    );
    const targets = new Map<string, ResourceRef>();
    for (const doc of withReferences) {
      for (const entry of (doc.idx as { ref?: string[] } | undefined)?.ref ?? []) {
        const bar = entry.indexOf('|');
        const param = entry.slice(0, bar);
        let target = entry.slice(bar + 1);
        if (target.startsWith(localPrefix)) target = target.slice(localPrefix.length);
        const match = RELATIVE_TARGET.exec(target);
        if (!match || !directives.some((directive) => follows(directive, doc.t, param, match[1]))) continue;
        targets.set(target, { type: match[1], id: match[2] });
      }
    }
    if (targets.size === 0) return [];
    const keys = [...targets.values()]
      .slice(0, MAX_INCLUDED)
      .map((ref) => this.repository.key(ctx, version, ref.type, ref.id));
    return this.repository.sizesOf(ctx, version, { _id: { $in: keys } }, MAX_INCLUDED);
  }

  /** `_revinclude`: resources of the directive's source type whose reference parameter names a source. */
  private async referencing(
    ctx: TenantContext,
    version: FhirVersion,
    directive: IncludeDirective,
    targets: readonly Source[],
    localPrefix: string,
  ): Promise<SizedRef[]> {
    const pointedAt = targets.filter((doc) => !directive.targetType || directive.targetType === doc.t);
    if (pointedAt.length === 0) return [];
    const references = pointedAt.flatMap((doc) => [`${doc.t}/${doc.id}`, `${localPrefix}${doc.t}/${doc.id}`]);
    const condition = directive.wildcard
      ? { 'idx.ref': { $regex: `^[^|]+\\|(?:${references.map(escapeRegex).join('|')})$` } }
      : {
          'idx.ref': {
            $in: directive.params.flatMap((param) => references.map((reference) => `${param}|${reference}`)),
          },
        };
    const filter = directive.sourceType ? { t: directive.sourceType, ...condition } : condition;
    return this.repository.sizesOf(ctx, version, storeFilter(filter), MAX_INCLUDED);
  }
}
