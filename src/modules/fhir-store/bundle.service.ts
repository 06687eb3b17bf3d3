import { Inject, Injectable } from '@nestjs/common';
import {
  bundleIntegrityProblems,
  bundleInvariantIssues,
  entryIdSource,
  issue,
  newResourceId,
  OperationOutcomeError,
  parseRequestUrl,
  parseVersionEtag,
  rewritePlaceholders,
  transactionResponseJson,
  type EntryMethod,
  type FhirVersion,
  type TransactionResponseEntry,
} from '@app/fhir';
import { inTurns } from '../../admission/event-loop-time';
import { SETTINGS } from '../../config/config.module';
import type { Settings } from '../../config/settings';
import { assertAllowed, permissionOf } from '../../tenancy/smart-scopes';
import type { TenantContext } from '../../tenancy/tenant-context';
import { conditionKey } from '../../storage/conditional-keys.repository';
import { conditionPairs, ConditionalService } from './conditional.service';
import { idParam, typeParam } from '../../fhir-http/path-params';
import { returnPreference } from '../../fhir-http/reply-presenter';
import { page, written, type Found, type Page, type Written } from '../../fhir-http/results';
import type { ResourceDoc } from '../../storage/documents';
import { StorageService, type StorageHandle } from '../../storage/storage-handle';
import { BundleWrites, type WrittenVersion } from '../../storage/write-protocol';
import { entryOf, failureEntry, type EntryResult } from './bundle-entries';
import { entryPatchDocument, PatchService } from './patch.service';
import { assertValid, FhirStoreService } from './fhir-store.service';
import { SearchService } from './search/search.service';

/** docs/api.md §13: resources per posted bundle. */
export const MAX_BUNDLE_ENTRIES = 20;

const METHODS = new Set<EntryMethod>(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']);
/** https://hl7.org/fhir/R4/http.html#trules: deletes, then creates and updates, then reads. */
const writtenOf = (stored: WrittenVersion): Written => written(stored.doc, stored.created);

const PROCESSING_ORDER: Record<EntryMethod, number> = { DELETE: 0, POST: 1, PUT: 1, PATCH: 1, GET: 2 };

interface RequestEntry {
  index: number;
  method: EntryMethod;
  url: string;
  fullUrl?: string;
  ifMatch?: string;
  ifNoneExist?: string;
  resource?: Record<string, unknown>;
  /** Conditional create that matched: the existing resource stands for the entry, nothing is written. */
  existing?: ResourceDoc;
  /** A conditional update that matched nothing: its body id may create, never overwrite (409). */
  createOnly?: boolean;
  /** The id a won condition key was claimed for (conditional create, or update that creates). */
  claimedId?: string;
  /** Gives the condition key back when the entry did not create after all. */
  release?: () => Promise<void>;
}

/** A POST/PUT entry once its type and id are known. */
interface WritePlan {
  entry: RequestEntry;
  type: string;
  id: string;
  resource: Record<string, unknown>;
  ifMatch?: number;
  createOnly?: boolean;
}

/**
 * `POST /{v}` with a `transaction` or `batch` Bundle (docs/api.md §5, §13): at most 20 entries, each
 * validated and stored independently (valid entries stored, invalid ones not), `urn:uuid:`
 * placeholders resolved everywhere first. New resources go to the database in one bulk insert;
 * existing ids fall back to the per-entry compare-and-set path. One Provenance lists everything
 * the bundle wrote; it goes in at the end with the history rows of the new resources in the same
 * history insert (docs/storage.md).
 */
@Injectable()
export class BundleService {
  constructor(
    private readonly storage: StorageService,
    private readonly store: FhirStoreService,
    private readonly conditional: ConditionalService,
    private readonly patches: PatchService,
    private readonly searches: SearchService,
    @Inject(SETTINGS) private readonly settings: Settings,
  ) {}

  async process(
    ctx: TenantContext,
    version: FhirVersion,
    body: Record<string, unknown>,
    prefer?: string,
  ): Promise<Page> {
    const { kind, entries } = readBundle(body);
    assertBundleInvariants(version, body);
    const responses: TransactionResponseEntry[] = new Array<TransactionResponseEntry>(entries.length);
    try {
      return await this.run(ctx, version, kind, entries, responses, prefer);
    } finally {
      // a claimed condition whose entry did not create decides nothing: give it back
      for (const entry of entries) {
        const status = responses[entry.index]?.response.status ?? '';
        if (entry.release && !status.startsWith('2')) await entry.release().catch(() => undefined);
      }
    }
  }

  private async run(
    ctx: TenantContext,
    version: FhirVersion,
    kind: 'transaction' | 'batch',
    entries: RequestEntry[],
    responses: TransactionResponseEntry[],
    prefer: string | undefined,
  ): Promise<Page> {
    const fail = (index: number, error: unknown) => (responses[index] = failureEntry(error, version));
    const store = this.storage.for(ctx);
    const claimed = new Map<string, number>();
    // each entry is held to the scopes as its own request would be (403 for a type not covered)
    const allowed = entries.filter((entry) => {
      try {
        const target = parseRequestUrl(entry.url);
        if (target) assertAllowed(ctx, permissionOf(entry.method, target.id !== undefined), target.type);
        return true;
      } catch (error) {
        fail(entry.index, error);
        return false;
      }
    });
    for (const entry of allowed) {
      await this.settleCondition(ctx, version, entry, responses, prefer, claimed);
    }
    const pending = allowed.filter((e) => responses[e.index] === undefined || e.existing);
    const plans = await this.plan(ctx, version, pending, fail);
    const ordered = [...pending].sort((a, b) => PROCESSING_ORDER[a.method] - PROCESSING_ORDER[b.method]);
    for (const entry of ordered.filter((e) => e.method === 'DELETE')) {
      await this.settle(version, entry.index, responses, () => this.deleteEntry(ctx, version, entry));
    }
    const representation = returnPreference(prefer) === 'representation';
    // One Provenance for everything the bundle wrote, recorded even when a write threw midway.
    const written = new BundleWrites();
    try {
      await this.writeAll(store, version, plans, responses, representation, written);
      for (const entry of ordered.filter((e) => e.method === 'PATCH')) {
        await this.settle(
          version,
          entry.index,
          responses,
          () => this.patchEntry(ctx, version, entry, written),
          representation,
        );
      }
    } finally {
      await store.recordProvenance(version, written);
    }
    // One byte budget for the whole response, spent in processing order (docs/security.md "Page
    // byte budget"): entries are served in full while some is left, the one crossing it included.
    const budget = { left: this.settings.searchPageMaxBytes };
    for (const entry of ordered) {
      const served = responses[entry.index];
      // Prefer: return=representation is a preference: once the budget is spent, minimal
      if (served?.resourceJson === undefined) continue;
      if (budget.left > 0) budget.left -= served.resourceJson.length;
      else delete served.resourceJson;
    }
    for (const entry of ordered.filter((e) => e.method === 'GET')) {
      await this.settle(version, entry.index, responses, () =>
        this.readEntry(ctx, version, kind, entry, budget.left),
      );
      budget.left -= responses[entry.index].resourceJson?.length ?? 0;
    }
    return page(transactionResponseJson(version, `${kind}-response`, responses));
  }

  /**
   * Conditional entries (https://hl7.org/fhir/R4/http.html#trules): `ifNoneExist` that matches
   * answers 200 with the existing resource (its fullUrl placeholder then points to it); a PUT or
   * DELETE `Type?criteria` becomes one on the matching id (PUT without a match: a create). A
   * failure (several matches → 412) becomes that entry's response.
   */
  private async settleCondition(
    ctx: TenantContext,
    version: FhirVersion,
    entry: RequestEntry,
    responses: TransactionResponseEntry[],
    prefer: string | undefined,
    claimed: Map<string, number>,
  ): Promise<void> {
    const target = parseRequestUrl(entry.url);
    // A second entry creating under a condition this bundle already claimed would wait for a
    // resource the bundle has not written yet: that entry fails instead (`claimed`: key → entry).
    const claim = async (type: string, query: string, id: string) => {
      const key = conditionKey(ctx, version, type, conditionPairs(query));
      const earlier = claimed.get(key);
      if (earlier !== undefined) {
        throw OperationOutcomeError.invalid(
          `Bundle.entry[${entry.index}] creates under the same condition as Bundle.entry[${earlier}]`,
        );
      }
      const result = await this.conditional.claim(ctx, version, type, query, id);
      if (result.won) {
        claimed.set(key, entry.index);
        Object.assign(entry, { claimedId: id, release: result.release });
      }
      return result;
    };
    const conditionalUrl = target !== undefined && target.id === undefined && target.query !== undefined;
    try {
      if (entry.method === 'POST' && entry.ifNoneExist !== undefined && target) {
        const type = typeParam(version, target.type);
        let match = await this.conditional.findOne(ctx, version, type, entry.ifNoneExist, prefer, 'create');
        const source = entryIdSource(type, entry.fullUrl, entry.resource?.id);
        if (!match && source.kind !== 'invalid') {
          // the same race-free create as `POST` with If-None-Exist (ConditionalService.claim)
          const id = source.kind === 'chosen' ? source.id : newResourceId();
          const result = await claim(type, entry.ifNoneExist, id);
          if (!result.won) match = result.holder;
        }
        if (match) {
          entry.existing = match;
          responses[entry.index] = this.entry(version, { kind: 'matched', doc: match }, false);
        }
      } else if ((entry.method === 'PUT' || entry.method === 'DELETE') && conditionalUrl) {
        const type = typeParam(version, target.type);
        const interaction = entry.method === 'PUT' ? 'update' : 'delete';
        let match = await this.conditional.findOne(ctx, version, type, target.query!, prefer, interaction);
        if (!match && entry.method === 'DELETE') {
          throw OperationOutcomeError.notFound(`no ${type} matches ${entry.url}: nothing was deleted`);
        }
        const bodyId = typeof entry.resource?.id === 'string' ? entry.resource.id : undefined;
        if (!match) {
          // an update that creates claims its condition as a conditional create does; the loser
          // of a race updates the winner's resource
          const id = bodyId ?? newResourceId();
          const result = await claim(type, target.query!, id);
          if (!result.won) match = result.holder;
        }
        if (match && bodyId !== undefined && bodyId !== match.id) {
          throw OperationOutcomeError.invalid(
            `resource.id ${bodyId} is not the matching ${type}/${match.id}`,
          );
        }
        entry.url = `${type}/${match?.id ?? entry.claimedId}`;
        entry.createOnly = entry.method === 'PUT' && !match;
      }
    } catch (error) {
      responses[entry.index] = failureEntry(error, version);
    }
  }

  /**
   * Types, ids and placeholder replacements of every POST/PUT entry; invalid entries fail here.
   * Each entry is rewritten and validated in a turn of the event loop of its own (inTurns).
   */
  private async plan(
    ctx: TenantContext,
    version: FhirVersion,
    entries: RequestEntry[],
    fail: (index: number, error: unknown) => void,
  ): Promise<WritePlan[]> {
    const replacements = new Map<string, string>();
    const plans: WritePlan[] = [];
    for (const entry of entries) {
      if (entry.method !== 'POST' && entry.method !== 'PUT') continue;
      if (entry.existing) {
        if (entry.fullUrl?.startsWith('urn:'))
          replacements.set(entry.fullUrl, `${entry.existing.t}/${entry.existing.id}`);
        continue;
      }
      try {
        const plan = planWrite(version, entry);
        if (entry.fullUrl?.startsWith('urn:')) replacements.set(entry.fullUrl, `${plan.type}/${plan.id}`);
        plans.push(plan);
      } catch (error) {
        fail(entry.index, error);
      }
    }
    const checked = await inTurns(ctx, plans, (plan) => {
      plan.resource = rewritePlaceholders(plan.resource, replacements);
      try {
        assertValid(version, plan.resource, plan.type, 400);
        return true;
      } catch (error) {
        fail(plan.entry.index, error);
        return false;
      }
    });
    return plans.filter((_, index) => checked[index]);
  }

  /**
   * Fast path: one bulk insert of the new resources (their history rows and Provenance are the
   * bundle's, in `written`, stored together at its end), with no look-up first (new ids are the common case:
   * ids chosen client-side). Ids that existed, repeated ids and conditional updates go through the
   * per-entry compare-and-set path, in bundle order.
   */
  private async writeAll(
    store: StorageHandle,
    version: FhirVersion,
    plans: WritePlan[],
    responses: TransactionResponseEntry[],
    representation: boolean,
    written: BundleWrites,
  ): Promise<void> {
    const seen = new Set<string>();
    const bulk: WritePlan[] = [];
    const single: WritePlan[] = [];
    for (const plan of plans) {
      const key = store.key(version, plan.type, plan.id);
      (seen.has(key) || plan.ifMatch !== undefined || plan.createOnly ? single : bulk).push(plan);
      seen.add(key);
    }
    const outcomes = await store.createMany(version, bulk, written);
    const known = new Set<WritePlan>();
    bulk.forEach((plan, index) => {
      const outcome = outcomes[index];
      if ('exists' in outcome) known.add(plan);
      else if ('error' in outcome) responses[plan.entry.index] = failureEntry(outcome.error, version);
      else responses[plan.entry.index] = this.entry(version, writtenOf(outcome.written), representation);
    });
    const slow = plans.filter((plan) => known.has(plan) || single.includes(plan));
    for (const plan of slow) {
      const upsert = async () =>
        writtenOf(
          await store.upsert(version, plan.type, plan.id, plan.resource, {
            ifMatch: plan.ifMatch,
            createOnly: plan.createOnly,
            bundle: written,
          }),
        );
      await this.settle(version, plan.entry.index, responses, upsert, representation);
    }
  }

  private entry(version: FhirVersion, result: EntryResult, representation = true): TransactionResponseEntry {
    return entryOf(result, version, this.settings.urls.base, representation);
  }

  private deleteEntry(ctx: TenantContext, version: FhirVersion, entry: RequestEntry): Promise<EntryResult> {
    const { type, id } = instanceOf(version, entry);
    return this.store.delete(ctx, version, type, id);
  }

  private patchEntry(
    ctx: TenantContext,
    version: FhirVersion,
    entry: RequestEntry,
    written: BundleWrites,
  ): Promise<EntryResult> {
    const { type, id } = instanceOf(version, entry);
    const document = entryPatchDocument(entry.resource);
    return this.patches.patch(ctx, version, type, id, document, entry.ifMatch, written);
  }

  /**
   * A GET entry within what the response has left (`maxBytes`): a search page gets that as its
   * byte budget (none left: an empty page whose `next` is that page); a read or vread is not
   * even looked up once nothing is left, and the entry tells the client to read it on its own.
   */
  private async readEntry(
    ctx: TenantContext,
    version: FhirVersion,
    kind: 'transaction' | 'batch',
    entry: RequestEntry,
    maxBytes: number,
  ): Promise<Found | Page> {
    const target = parseRequestUrl(entry.url);
    if (!target) throw OperationOutcomeError.invalid(`cannot read url "${entry.url}"`);
    const type = typeParam(version, target.type);
    if (target.id === undefined) {
      // the search of `GET /{v}/{type}?…`, every parameter of the entry's url included
      const pairs = [...new URLSearchParams(target.query ?? '')];
      return this.searches.search(ctx, version, type, pairs, undefined, { maxBytes });
    }
    if (maxBytes <= 0) {
      throw new OperationOutcomeError(
        'too-costly',
        `this ${kind}-response reached its byte budget (SEARCH_PAGE_MAX_BYTES) before this entry: read ${entry.url} on its own`,
      );
    }
    return target.versionId !== undefined
      ? this.store.vread(ctx, version, type, idParam(target.id), target.versionId)
      : this.store.read(ctx, version, type, idParam(target.id));
  }

  /** Runs one entry and presents its result; its failure becomes that entry's response, never the bundle's. */
  private async settle(
    version: FhirVersion,
    index: number,
    responses: TransactionResponseEntry[],
    run: () => Promise<EntryResult>,
    representation = true,
  ): Promise<void> {
    try {
      responses[index] = this.entry(version, await run(), representation);
    } catch (error) {
      responses[index] = failureEntry(error, version);
    }
  }
}

/** Type and id of a DELETE or PATCH entry, whose url must name one resource (`Type/id`). */
function instanceOf(version: FhirVersion, entry: RequestEntry): { type: string; id: string } {
  const target = parseRequestUrl(entry.url);
  if (!target?.id || target.versionId || target.query) {
    throw OperationOutcomeError.invalid(`${entry.method} needs a url Type/id (got "${entry.url}")`);
  }
  return { type: typeParam(version, target.type), id: idParam(target.id) };
}

/**
 * Whole-bundle checks (nothing is stored when one fails): type, size, every entry's request, and
 * entries that contradict each other (bundleIntegrityProblems).
 */
function readBundle(body: Record<string, unknown>): {
  kind: 'transaction' | 'batch';
  entries: RequestEntry[];
} {
  if (body.resourceType !== 'Bundle') {
    throw OperationOutcomeError.invalid(
      `POST /{version} takes a Bundle (got resourceType ${JSON.stringify(body.resourceType)})`,
      'resourceType',
    );
  }
  if (body.type !== 'transaction' && body.type !== 'batch') {
    throw OperationOutcomeError.invalid(
      `Bundle.type must be transaction or batch (got ${JSON.stringify(body.type)})`,
      'Bundle.type',
    );
  }
  const rawEntries = body.entry ?? [];
  if (!Array.isArray(rawEntries))
    throw OperationOutcomeError.invalid('Bundle.entry must be an array', 'Bundle.entry');
  if (rawEntries.length > MAX_BUNDLE_ENTRIES) {
    throw OperationOutcomeError.invalid(
      `a posted Bundle holds at most ${MAX_BUNDLE_ENTRIES} entries (got ${rawEntries.length}); nothing was stored`,
      'Bundle.entry',
    );
  }
  const problems: string[] = [];
  const entries = rawEntries.map((raw: unknown, index): RequestEntry => {
    const path = `Bundle.entry[${index}]`;
    const entry = (raw ?? {}) as Record<string, unknown>;
    const request = entry.request as Record<string, unknown> | undefined;
    const method = typeof request?.method === 'string' ? request.method.toUpperCase() : undefined;
    if (typeof raw !== 'object' || raw === null || !request || typeof request !== 'object') {
      problems.push(`${path} has no request`);
    } else if (!method || !METHODS.has(method as EntryMethod)) {
      problems.push(`${path}.request.method must be GET, POST, PUT, PATCH or DELETE`);
    } else if (typeof request.url !== 'string' || request.url.trim() === '') {
      problems.push(`${path}.request.url is missing`);
    }
    const resource = entry.resource;
    return {
      index,
      method: (method ?? 'GET') as EntryMethod,
      url: typeof request?.url === 'string' ? request.url : '',
      fullUrl: typeof entry.fullUrl === 'string' ? entry.fullUrl : undefined,
      ifMatch: typeof request?.ifMatch === 'string' ? request.ifMatch : undefined,
      ifNoneExist: typeof request?.ifNoneExist === 'string' ? request.ifNoneExist : undefined,
      resource:
        resource && typeof resource === 'object' && !Array.isArray(resource)
          ? (resource as Record<string, unknown>)
          : undefined,
    };
  });
  if (problems.length > 0) {
    throw new OperationOutcomeError('invalid', problems.join('; '), {
      status: 400,
      issues: problems.map((p) => issue('required', `${p}; nothing was stored`, { path: p.split(' ')[0] })),
    });
  }
  const contradictions = bundleIntegrityProblems(entries);
  if (contradictions.length > 0) {
    throw new OperationOutcomeError('invalid', contradictions.map((p) => p.message).join('; '), {
      status: 400,
      issues: contradictions.map((p) =>
        issue('invalid', `${p.message}; nothing was stored`, { path: p.path }),
      ),
    });
  }
  return { kind: body.type, entries };
}

/**
 * The envelope keeps the Bundle invariants of its version (bdl-*, e.g. no `total`, no `response` in a
 * transaction, one fullUrl per resource), each broken one named in a 400; every entry's resource is
 * validated as its own write. DSTU2 creates without a fullUrl pass (dstu2-bundle-invariants.ts).
 */
function assertBundleInvariants(version: FhirVersion, body: Record<string, unknown>): void {
  const broken = bundleInvariantIssues(version, body);
  if (broken.length === 0) return;
  throw new OperationOutcomeError('invalid', broken.map((i) => `${i.path}: ${i.message}`).join('; '), {
    status: 400,
    issues: broken.map((i) =>
      issue(i.code, `${i.message}; nothing was stored`, { path: i.path, rule: i.rule }),
    ),
  });
}

/** Type and id of a POST/PUT entry (docs/api.md §5 id rules). */
function planWrite(version: FhirVersion, entry: RequestEntry): WritePlan {
  const target = parseRequestUrl(entry.url);
  if (!entry.resource) throw OperationOutcomeError.invalid(`${entry.method} entry has no resource`);
  if (!target) throw OperationOutcomeError.invalid(`cannot read request.url "${entry.url}"`);
  const type = typeParam(version, target.type);
  let ifMatch: number | undefined;
  if (entry.ifMatch !== undefined) {
    ifMatch = parseVersionEtag(entry.ifMatch);
    if (ifMatch === undefined)
      throw new OperationOutcomeError('conflict', `ifMatch "${entry.ifMatch}" is not a version ETag`, {
        status: 412,
      });
  }
  if (entry.method === 'PUT') {
    if (target.id === undefined)
      throw OperationOutcomeError.invalid(`PUT needs a url Type/id (got "${entry.url}")`);
    const id = idParam(target.id);
    if (entry.resource.id !== undefined && entry.resource.id !== id) {
      throw OperationOutcomeError.invalid(
        `resource.id ${JSON.stringify(entry.resource.id)} differs from the id in request.url (${id})`,
        'id',
      );
    }
    return { entry, type, id, resource: { ...entry.resource, id }, ifMatch, createOnly: entry.createOnly };
  }
  if (target.id !== undefined)
    throw OperationOutcomeError.invalid(`POST url must be a resource type (got "${entry.url}")`);
  const source = entryIdSource(type, entry.fullUrl, entry.resource.id);
  if (source.kind === 'invalid') throw OperationOutcomeError.invalid(source.message, 'id');
  const id = entry.claimedId ?? (source.kind === 'chosen' ? source.id : newResourceId());
  return { entry, type, id, resource: { ...entry.resource, id }, ifMatch };
}
