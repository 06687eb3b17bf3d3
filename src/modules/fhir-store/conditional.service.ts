import { Injectable } from '@nestjs/common';
import { newResourceId, OperationOutcomeError, type FhirVersion } from '@app/fhir';
import { conditionKey, ConditionalKeysRepository } from '../../storage/conditional-keys.repository';
import { StorageService } from '../../storage/storage-handle';
import type { TenantContext } from '../../tenancy/tenant-context';
import type { Matched, Removed, Written } from '../../fhir-http/results';
import { FhirStoreService } from './fhir-store.service';
import type { PatchDocument } from '../../fhir-http/patch-body';
import { assertPatchable, PatchService } from './patch.service';
import { isLenientHandling } from '../../fhir-http/prefer';
import { SearchService } from './search/search.service';
import type { ResourceDoc } from '../../storage/documents';

export type SearchPairs = Array<[string, string]>;

/**
 * A condition key older than this decides nothing: its creator died between claiming it and
 * writing the resource (docs/storage.md "Conditional create"). Longer than any write takes.
 */
const KEY_STALE_MS = 10_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Claiming a condition's key for a create: the caller creates, or answers with the holder. */
export type Claim = { won: true; release: () => Promise<void> } | { won: false; holder: ResourceDoc };

/** Parameters about the answer, not the match: never part of a condition. */
const RESULT_PARAMS = new Set(['_format', '_pretty', '_summary', '_elements', '_count']);

/** `Patient?identifier=x|1` or `identifier=x|1` → the search pairs of the condition. */
export function conditionPairs(query: string | SearchPairs): SearchPairs {
  const pairs = typeof query === 'string' ? [...new URLSearchParams(query.replace(/^[^?]*\?/, ''))] : query;
  return pairs.filter(([name]) => !RESULT_PARAMS.has(name));
}

/**
 * The conditional interactions (https://hl7.org/fhir/R4/http.html#ccreate, #cond-update,
 * #3.1.0.7.1): a search in the caller's scope decides; 0, 1 or several matches as the spec says.
 * Several matches → 412 and nothing is written.
 */
@Injectable()
export class ConditionalService {
  constructor(
    private readonly store: FhirStoreService,
    private readonly searches: SearchService,
    private readonly storage: StorageService,
    private readonly keys: ConditionalKeysRepository,
    private readonly patches: PatchService,
  ) {}

  /**
   * Concurrent identical conditional creates all see "no match"; the unique condition key lets
   * one create and makes the others answer with its resource (HAPI's search-URL table). A key whose
   * resource was deleted, or whose creator never wrote it (older than KEY_STALE_MS), is taken over.
   * Every conditional create goes through here (REST and bundle entries); a winner that does not
   * write `id` after all calls `release`.
   */
  async claim(
    ctx: TenantContext,
    version: FhirVersion,
    type: string,
    query: string | SearchPairs,
    id: string,
  ): Promise<Claim> {
    const key = conditionKey(ctx, version, type, conditionPairs(query));
    const store = this.storage.for(ctx);
    const rk = store.key(version, type, id);
    const won: Claim = { won: true, release: () => this.keys.release(ctx, key, rk) };
    for (let attempt = 0; ; attempt++) {
      if (await this.keys.claim(ctx, key, rk)) return won;
      const held = await this.keys.find(ctx, key);
      if (!held) continue; // given back meanwhile
      const stale = Date.now() - held.at.getTime() > KEY_STALE_MS;
      const doc = stale ? null : await store.readKey(held.rk);
      // the key's resource answers only while it matches the condition (its body may not have)
      const answers = doc && !doc.del && (await this.stillMatches(ctx, version, type, query, doc));
      if (doc && answers) return { won: false, holder: doc };
      if (stale || doc) {
        if (await this.keys.takeOver(ctx, held, rk)) return won;
        continue;
      }
      // the winner is writing its resource: it lands within moments (or the key goes stale)
      await sleep(Math.min(10 + attempt * 10, 100));
    }
  }

  /** Whether the resource a condition key names is among the condition's matches. */
  private async stillMatches(
    ctx: TenantContext,
    version: FhirVersion,
    type: string,
    query: string | SearchPairs,
    doc: ResourceDoc,
  ): Promise<boolean> {
    const pairs: SearchPairs = [...conditionPairs(query), ['_id', doc.id]];
    // lenient: parameters the condition's own search ignored are ignored here too
    return (await this.searches.matches(ctx, version, type, pairs, { limit: 1, lenient: true })).length > 0;
  }

  /** Runs the create of a claimed key; a failed create gives the key back. */
  private async createClaimed(claim: Claim & { won: true }, create: () => Promise<Written>) {
    try {
      return await create();
    } catch (error) {
      await claim.release();
      throw error;
    }
  }

  /** The one current resource matching, undefined for none; 412 for several; 400 without criteria. */
  async findOne(
    ctx: TenantContext,
    version: FhirVersion,
    type: string,
    query: string | SearchPairs,
    prefer: string | undefined,
    interaction: string,
  ): Promise<ResourceDoc | undefined> {
    const pairs = conditionPairs(query);
    if (pairs.length === 0) {
      throw OperationOutcomeError.invalid(`a conditional ${interaction} needs search parameters`);
    }
    const found = await this.searches.matches(ctx, version, type, pairs, {
      limit: 2,
      lenient: isLenientHandling(prefer),
    });
    if (found.length > 1) {
      throw new OperationOutcomeError(
        'multiple-matches',
        `the conditional ${interaction} matches several ${type} resources: make the criteria more selective`,
        { status: 412 },
      );
    }
    return found[0];
  }

  /** `POST` with `If-None-Exist`: 0 matches → create; 1 → 200 with the existing one, nothing stored. */
  async create(
    ctx: TenantContext,
    version: FhirVersion,
    type: string,
    resource: Record<string, unknown>,
    ifNoneExist: string,
    prefer?: string,
  ): Promise<Written | Matched> {
    const existing = await this.findOne(ctx, version, type, ifNoneExist, prefer, 'create');
    if (existing) return { kind: 'matched', doc: existing };
    const id = typeof resource.id === 'string' ? resource.id : newResourceId();
    const claim = await this.claim(ctx, version, type, ifNoneExist, id);
    if (!claim.won) return { kind: 'matched', doc: claim.holder };
    return this.createClaimed(claim, () => this.store.create(ctx, version, type, { ...resource, id }));
  }

  /**
   * `PUT /{v}/{type}?criteria`: 0 matches → create (with the body's id, else a new one); 1 → update
   * of that resource (a body id naming another resource → 400); `If-Match` applies to the match.
   */
  async update(
    ctx: TenantContext,
    version: FhirVersion,
    type: string,
    query: string | SearchPairs,
    resource: Record<string, unknown>,
    ifMatch: string | undefined,
    prefer?: string,
  ): Promise<Written> {
    let match = await this.findOne(ctx, version, type, query, prefer, 'update');
    if (!match) {
      if (ifMatch !== undefined) {
        throw new OperationOutcomeError('conflict', `If-Match ${ifMatch}: no ${type} matches the criteria`, {
          status: 412,
        });
      }
      const id = typeof resource.id === 'string' ? resource.id : newResourceId();
      const claim = await this.claim(ctx, version, type, query, id);
      // a concurrent identical update created it first: this one updates that resource
      if (!claim.won) match = claim.holder;
      // R4: no match and a body id that already exists → 409, never an overwrite of that resource
      else
        return this.createClaimed(claim, () =>
          this.store.update(ctx, version, type, id, { ...resource, id }, undefined, { createOnly: true }),
        );
    }
    if (resource.id !== undefined && resource.id !== match.id) {
      throw OperationOutcomeError.invalid(
        `the body's id ${JSON.stringify(resource.id)} is not the id of the matching resource (${match.id})`,
        'id',
      );
    }
    return this.store.update(ctx, version, type, match.id, { ...resource, id: match.id }, ifMatch);
  }

  /** `DELETE /{v}/{type}?criteria`: 0 matches → 404; 1 → an ordinary delete; several → 412. */
  async delete(
    ctx: TenantContext,
    version: FhirVersion,
    type: string,
    query: string | SearchPairs,
    prefer?: string,
  ): Promise<Removed> {
    const match = await this.findOne(ctx, version, type, query, prefer, 'delete');
    if (!match) throw OperationOutcomeError.notFound(`no ${type} matches the criteria: nothing was deleted`);
    return this.store.delete(ctx, version, type, match.id);
  }

  /**
   * `PATCH /{v}/{type}?criteria` (https://hl7.org/fhir/R4/http.html#patch): 0 matches → 404; 1 → an
   * ordinary patch of that resource (`If-Match` applies to it); several → 412. Never a create.
   */
  async patch(
    ctx: TenantContext,
    version: FhirVersion,
    type: string,
    query: string | SearchPairs,
    document: PatchDocument,
    ifMatch: string | undefined,
    prefer?: string,
  ): Promise<Written> {
    assertPatchable(version);
    const match = await this.findOne(ctx, version, type, query, prefer, 'patch');
    if (!match) throw OperationOutcomeError.notFound(`no ${type} matches the criteria: nothing was patched`);
    return this.patches.patch(ctx, version, type, match.id, document, ifMatch);
  }
}
