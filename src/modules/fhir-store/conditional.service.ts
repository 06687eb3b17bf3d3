import { Injectable } from '@nestjs/common';
import { OperationOutcomeError, type FhirVersion } from '@app/fhir';
import type { TenantContext } from '../../tenancy/tenant-context';
import type { FhirReply } from './fhir-reply';
import { FhirStoreService } from './fhir-store.service';
import { assertPatchable, PatchService, type PatchDocument } from './patch.service';
import { isLenientHandling } from './prefer';
import { SearchService } from './search/search.service';
import type { ResourceDoc } from '../../storage/documents';

export type SearchPairs = Array<[string, string]>;

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
    private readonly patches: PatchService,
  ) {}

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
  ): Promise<FhirReply> {
    const existing = await this.findOne(ctx, version, type, ifNoneExist, prefer, 'create');
    if (!existing) return this.store.create(ctx, version, type, resource, prefer);
    return this.store.existingReply(version, existing, 'already exists: nothing was created', prefer);
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
  ): Promise<FhirReply> {
    const match = await this.findOne(ctx, version, type, query, prefer, 'update');
    if (!match) {
      if (ifMatch !== undefined) {
        throw new OperationOutcomeError('conflict', `If-Match ${ifMatch}: no ${type} matches the criteria`, {
          status: 412,
        });
      }
      // R4: no match and a body id that already exists → 409, never an overwrite of that resource
      return typeof resource.id === 'string'
        ? this.store.update(ctx, version, type, resource.id, resource, undefined, prefer, {
            createOnly: true,
          })
        : this.store.create(ctx, version, type, resource, prefer);
    }
    if (resource.id !== undefined && resource.id !== match.id) {
      throw OperationOutcomeError.invalid(
        `the body's id ${JSON.stringify(resource.id)} is not the id of the matching resource (${match.id})`,
        'id',
      );
    }
    return this.store.update(ctx, version, type, match.id, { ...resource, id: match.id }, ifMatch, prefer);
  }

  /** `DELETE /{v}/{type}?criteria`: 0 matches → 404; 1 → an ordinary delete; several → 412. */
  async delete(
    ctx: TenantContext,
    version: FhirVersion,
    type: string,
    query: string | SearchPairs,
    prefer?: string,
  ): Promise<FhirReply> {
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
  ): Promise<FhirReply> {
    assertPatchable(version);
    const match = await this.findOne(ctx, version, type, query, prefer, 'patch');
    if (!match) throw OperationOutcomeError.notFound(`no ${type} matches the criteria: nothing was patched`);
    return this.patches.patch(ctx, version, type, match.id, document, ifMatch, prefer);
  }
}
