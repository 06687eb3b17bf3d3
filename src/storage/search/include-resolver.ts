import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { escapeRegex } from '@app/fhir/search/text-normalization';
import {
  issue,
  operationOutcome,
  OperationOutcomeError,
  type FhirVersion,
  type IncludeDirective,
  type ParsedSearch,
  type SearchsetEntry,
} from '@app/fhir';
import type { TenantContext } from '../../tenancy/tenant-context';
import type { ResourceDoc } from '../documents';
import { ResourceRepository, type ResourceRef, type SizedRef } from '../resource.repository';
import type { Filter } from './filter-clauses';
import { INDEX_NAMES } from './search-indexes';
import { storedReferenceEntries, storedReferenceParams } from './stored-conditions';

/**
 * Most included resources considered for one page: `_include=*` on a page of 100 must stay bounded
 * (HAPI's maximumIncludesToLoadPerPage has the same default). Past it the page says so in an
 * OperationOutcome entry (`includesTruncatedEntry`).
 */
export const MAX_INCLUDED = 1000;

/**
 * Distinct `_include` and `_revinclude` directives one search may carry, once repeated ones are
 * collapsed: each is a query per level (a `_revinclude` one of the tenant's reference index, `*`
 * a regex over it). More → 400 too-costly naming the limit.
 */
export const MAX_INCLUDE_DIRECTIVES = 20;

/**
 * Levels of includes one search follows: the first level, then `:iterate` directives on what the
 * level before added, until nothing new is found (a fixed point) or this many levels were read.
 * Each level is a query per directive over up to MAX_INCLUDED sources; past the cap, what a
 * further level would have added is left out and the page says so (`includeDepthCappedEntry`).
 */
export const MAX_INCLUDE_DEPTH = 3;

/** Resources whose references go into one wildcard `_revinclude` regex: the pattern stays a few KB. */
const TARGETS_PER_WILDCARD_QUERY = 100;

const RELATIVE_TARGET = /^([A-Z][A-Za-z]+)\/([A-Za-z0-9\-.]{1,64})$/;

/**
 * Whether a directive follows the stored entry of `param` (a source of `sourceType` referencing a
 * `targetType`): its parameters are read where they are stored (`stored`: storedReferenceParams of
 * the directive's), so a derived `Observation:patient` follows the `subject` entries naming a Patient.
 */
function follows(
  directive: IncludeDirective,
  stored: ReturnType<typeof storedReferenceParams>,
  sourceType: string,
  param: string,
  targetType: string,
): boolean {
  if (directive.targetType && directive.targetType !== targetType) return false;
  if (directive.wildcard) return true;
  if (directive.sourceType !== sourceType) return false;
  return stored.some(
    (entry) => entry.param === param && (!entry.targetTypes || entry.targetTypes.includes(targetType)),
  );
}

/** A resource whose references an include follows: with its `idx.ref` entries when a page brought them. */
type Source = Pick<ResourceDoc, '_id' | 't' | 'id'> & { idx?: { ref?: string[] } };

/** The directives without repeats (`_revinclude:iterate=*` sent 60 times is one directive), in order. */
function distinct(directives: readonly IncludeDirective[]): IncludeDirective[] {
  const seen = new Map<string, IncludeDirective>();
  for (const directive of directives) {
    const key = JSON.stringify([
      directive.wildcard,
      directive.sourceType ?? '',
      [...directive.params].sort(),
      directive.targetType ?? '',
      directive.iterate,
    ]);
    if (!seen.has(key)) seen.set(key, directive);
  }
  return [...seen.values()];
}

/** An included resource as a searchset entry serves it. */
export type IncludedDoc = Pick<ResourceDoc, '_id' | 'v' | 't' | 'id' | 'json'>;

/**
 * What `resolve` found: at most MAX_INCLUDED additions, whether there were more, and whether
 * `:iterate` would have found more past MAX_INCLUDE_DEPTH levels.
 */
export interface ResolvedIncludes {
  /** With the JSON of those small enough (`resolve`'s `jsonUpTo`): `read` then needs no look-up. */
  additions: Array<SizedRef & { json?: string }>;
  truncated: boolean;
  depthCapped: boolean;
}

/** The OperationOutcome entry of a page whose additions stopped at MAX_INCLUDED. */
export function includesTruncatedEntry(): SearchsetEntry {
  const outcome = operationOutcome([
    issue(
      'too-costly',
      `_include/_revinclude found more than ${MAX_INCLUDED} resources for this page; only the first ${MAX_INCLUDED} are included (ask for a smaller _count)`,
      { severity: 'warning' },
    ),
  ]);
  return { fullUrl: `urn:uuid:${randomUUID()}`, resource: outcome, mode: 'outcome' };
}

/** The OperationOutcome entry of a page whose `:iterate` includes stopped at MAX_INCLUDE_DEPTH levels. */
export function includeDepthCappedEntry(): SearchsetEntry {
  const outcome = operationOutcome([
    issue(
      'too-costly',
      `_include:iterate/_revinclude:iterate were followed ${MAX_INCLUDE_DEPTH} levels deep; resources further away are not included`,
      { severity: 'warning' },
    ),
  ]);
  return { fullUrl: `urn:uuid:${randomUUID()}`, resource: outcome, mode: 'outcome' };
}

/**
 * `_include` / `_revinclude` (https://hl7.org/fhir/R4/search.html#include): the resources the
 * matches reference, and the resources that reference the matches, through the `idx.ref` entries
 * written at index time. Every look-up goes through the repository with the caller's tenant scope,
 * so an include can never reach another user's resource. `:iterate` directives run again on what
 * the level before included, until a level adds nothing new, at most MAX_INCLUDE_DEPTH levels in
 * all (https://hl7.org/fhir/R4/search.html#revinclude: iterate "until no new resources are
 * found"; the cap bounds a cyclic or very connected store). Nothing is returned
 * twice, and nothing that is already a match. Repeated directives collapse into one; more than
 * MAX_INCLUDE_DIRECTIVES distinct ones are refused (docs/security.md "Database work").
 *
 * Two steps, so that the page byte budget decides before any JSON is read (docs/security.md
 * "Page byte budget"): `resolve` finds what would be included with each resource's JSON size
 * (up to MAX_INCLUDED), and the JSON itself of the `_include` targets only when all of them of
 * that size would fit `jsonUpTo` (the page's budget: what is decoded and not served stays within
 * it); `read` then fetches the JSON of the others the page keeps.
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
    jsonUpTo?: number,
  ): Promise<ResolvedIncludes> {
    const include = distinct(parsed.include);
    const revinclude = distinct(parsed.revinclude);
    if (include.length + revinclude.length > MAX_INCLUDE_DIRECTIVES) {
      throw new OperationOutcomeError(
        'too-costly',
        `the search has ${include.length + revinclude.length} distinct _include/_revinclude directives; at most ${MAX_INCLUDE_DIRECTIVES}`,
        { status: 400 },
      );
    }
    if (include.length === 0 && revinclude.length === 0)
      return { additions: [], truncated: false, depthCapped: false };
    const seen = new Set(matches.map((doc) => doc._id));
    const included: ResolvedIncludes['additions'] = [];
    const add = (docs: ResolvedIncludes['additions']): SizedRef[] => {
      const fresh = docs.filter((doc) => !seen.has(doc._id));
      for (const doc of fresh) seen.add(doc._id);
      included.push(...fresh);
      return fresh;
    };
    const localPrefix = `${serviceBase}/${version}/`;
    // the JSON comes with the first level's targets only: what is decoded and not served stays
    // within one budget, however many levels `:iterate` adds
    let level = add(
      await this.level(ctx, version, { include, revinclude }, matches, { localPrefix, jsonUpTo }),
    );
    const iterating = {
      include: include.filter((d) => d.iterate),
      revinclude: revinclude.filter((d) => d.iterate),
    };
    const iterates = iterating.include.length + iterating.revinclude.length > 0;
    let depth = 1;
    let depthCapped = false;
    while (iterates && level.length > 0 && included.length < MAX_INCLUDED) {
      const next = await this.level(ctx, version, iterating, level, { localPrefix });
      if (depth === MAX_INCLUDE_DEPTH) {
        // one level past the cap is read only to tell whether the cap left anything out
        depthCapped = next.some((doc) => !seen.has(doc._id));
        break;
      }
      level = add(next);
      depth++;
    }
    return {
      additions: included.slice(0, MAX_INCLUDED),
      truncated: included.length > MAX_INCLUDED,
      depthCapped,
    };
  }

  /**
   * The current JSON of resolved inclusions, in their order: as resolved where it came with them,
   * else read by key (one deleted meanwhile is left out).
   */
  async read(
    ctx: TenantContext,
    version: FhirVersion,
    refs: ResolvedIncludes['additions'],
  ): Promise<IncludedDoc[]> {
    const unread = refs.filter((ref) => ref.json === undefined);
    const docs = await this.repository.findByKeys(
      ctx,
      version,
      unread.map((ref) => ({ type: ref.t, id: ref.id })),
    );
    const byId = new Map(docs.map((doc) => [doc._id, doc]));
    return refs.flatMap((ref): IncludedDoc[] => {
      if (ref.json !== undefined) return [{ _id: ref._id, v: version, t: ref.t, id: ref.id, json: ref.json }];
      const doc = byId.get(ref._id);
      return doc ? [doc] : [];
    });
  }

  private async level(
    ctx: TenantContext,
    version: FhirVersion,
    directives: { include: readonly IncludeDirective[]; revinclude: readonly IncludeDirective[] },
    sources: readonly Source[],
    options: { localPrefix: string; jsonUpTo?: number },
  ): Promise<ResolvedIncludes['additions']> {
    const [forward, reverse] = await Promise.all([
      this.referenced(ctx, version, directives.include, sources, options),
      Promise.all(
        directives.revinclude.map((directive) => this.referencing(ctx, version, directive, sources)),
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
    options: { localPrefix: string; jsonUpTo?: number },
  ): Promise<ResolvedIncludes['additions']> {
    if (directives.length === 0 || sources.length === 0) return [];
    const { localPrefix } = options;
    // a search page's matches bring their entries (SearchPageSize.references); the others are read
    const brought = sources.filter((doc) => doc.idx !== undefined);
    const unread = sources.filter((doc) => doc.idx === undefined);
    const withReferences: Source[] =
      unread.length === 0
        ? brought
        : [
            ...brought,
            ...(await this.repository.findFields(
              ctx,
              version,
              { _id: { $in: unread.map((doc) => doc._id) } },
              { 'idx.ref': 1 },
              unread.length,
            )),
          ];
    const followed = directives.map((directive) => ({
      directive,
      stored: storedReferenceParams(version, directive.sourceType ?? '', directive.params),
    }));
    const targets = new Map<string, ResourceRef>();
    for (const doc of withReferences) {
      for (const entry of doc.idx?.ref ?? []) {
        const bar = entry.indexOf('|');
        const param = entry.slice(0, bar);
        let target = entry.slice(bar + 1);
        if (target.startsWith(localPrefix)) target = target.slice(localPrefix.length);
        const match = RELATIVE_TARGET.exec(target);
        if (!match || !followed.some((f) => follows(f.directive, f.stored, doc.t, param, match[1]))) continue;
        targets.set(target, { type: match[1], id: match[2] });
      }
    }
    if (targets.size === 0) return [];
    const keys = [...targets.values()]
      .slice(0, MAX_INCLUDED)
      .map((ref) => this.repository.key(ctx, version, ref.type, ref.id));
    return this.repository.sizesOf(ctx, version, { _id: { $in: keys } }, keys.length, {
      jsonUpTo: options.jsonUpTo,
    });
  }

  /** `_revinclude`: resources of the directive's source type whose reference parameter names a source. */
  private async referencing(
    ctx: TenantContext,
    version: FhirVersion,
    directive: IncludeDirective,
    targets: readonly Source[],
  ): Promise<SizedRef[]> {
    const pointedAt = targets.filter((doc) => !directive.targetType || directive.targetType === doc.t);
    if (pointedAt.length === 0) return [];
    // a reference to this server is stored relative only (local-references.ts)
    const referencesOf = (docs: readonly Source[]) => docs.map((doc) => `${doc.t}/${doc.id}`);
    const query = (condition: Filter, hint?: string) =>
      this.repository.sizesOf(
        ctx,
        version,
        directive.sourceType ? { t: directive.sourceType, ...condition } : condition,
        MAX_INCLUDED + 1,
        hint === undefined ? {} : { hint },
      );
    if (!directive.wildcard) {
      const references = referencesOf(pointedAt);
      const sourceType = directive.sourceType ?? '';
      const entries = directive.params.flatMap((param) =>
        storedReferenceEntries(version, sourceType, param, references),
      );
      if (entries.length === 0) return [];
      // named: in `_id` order the planner read the source type's key index and tested every
      // resource of that type (a user's 2,725 Provenances for one Patient's), where the
      // references index reads the few that point at the page and sorts them
      return query({ 'idx.ref': { $in: entries } }, INDEX_NAMES.ref);
    }
    // any parameter: a regex of the references, a chunk of targets at a time, until enough are found
    const found: SizedRef[] = [];
    for (
      let from = 0;
      from < pointedAt.length && found.length <= MAX_INCLUDED;
      from += TARGETS_PER_WILDCARD_QUERY
    ) {
      const references = referencesOf(pointedAt.slice(from, from + TARGETS_PER_WILDCARD_QUERY));
      found.push(
        ...(await query({ 'idx.ref': { $regex: `^[^|]+\\|(?:${references.map(escapeRegex).join('|')})$` } })),
      );
    }
    return found;
  }
}
