import { Injectable } from '@nestjs/common';
import { patientCompartmentKey, type FhirVersion } from '@app/fhir';
import type { TenantContext } from '../../tenancy/tenant-context';
import { ResourceRepository, type SizedRef, type TypeCount } from '../resource.repository';
import {
  anyPatientCompartmentFilter,
  careDateCondition,
  outsideReferencePattern,
  outsideTargets,
} from './everything-filters';
import type { Filter } from './filter-clauses';
import { typeAmong } from './patient-compartment-filter';
import { clientKeySpace, keyOrderIndex } from '../key-space';
import { INDEX_NAMES } from './search-indexes';

/**
 * The order of one Patient's compartment: by type, then newest first (lastUpdated, then id), the
 * order the references index holds after the compartment's one entry (`*patient|Patient/x`), so a
 * page reads its rows in index order and stops after them.
 */
const COMPARTMENT_ORDER = { t: 1, lu: -1, id: 1 } as const;

/**
 * The order of every Patient's compartments together (type level): resource type, then id, which
 * is the order of `_id` within a type (`${v}|${c}|${t}|${id}`), so a user's key-order index
 * `{v, c, u, t, _id}` holds it.
 */
const PAGE_ORDER = { t: 1, _id: 1 } as const;

/**
 * A client's type level (no user): key order, on the primary key bounded by the client's key space
 * (key-space.ts `clientKeySpace`): type then id, but a type after the longer type names it begins.
 */
const CLIENT_PAGE_ORDER = { _id: 1 } as const;

/** Which resources an `$everything` serves (its parameters, https://hl7.org/fhir/R4/patient-operation-everything.html). */
export interface EverythingSelection {
  types?: string[];
  since?: Date;
  start?: Date;
  end?: Date;
}

/**
 * One `$everything`'s queries (opaque above storage): the compartment, what of it is served, the
 * index they run on, and the Patient served first (instance level).
 */
export interface EverythingScope {
  readonly compartment: Filter;
  readonly served: Filter;
  readonly hint?: string;
  /** The index a page's window of the compartment is read on, in `order` (else `hint`'s). */
  readonly pageHint?: string;
  /** The order of the compartment's resources in the pages. */
  readonly order: Readonly<Record<string, 1 | -1>>;
  /** Instance level: the Patient, served first (read by key: `patient`). */
  readonly patient?: { readonly id: string; readonly key: string };
}

/** A compartment resource of the page window: its JSON too when it was small enough to come inline. */
export type WindowRow = SizedRef & { json?: string };

/**
 * The reads of `Patient/$everything` and of its removal (everything.service.ts lays out the pages):
 * per-type counts, the resources referenced outside the compartment, and the compartment's part
 * of a page, by key and JSON size only (the page byte budget decides before any JSON is read).
 */
@Injectable()
export class EverythingReader {
  constructor(private readonly repository: ResourceRepository) {}

  /**
   * Instance level (`patientId`): Patient/{id} (read by key, 404 when it is not in the caller's
   * scope) and its compartment without it, the one `*patient|Patient/{id}` entry on the references
   * index (hinted: the planner cannot tell multikey selectivity). Type level: every Patient
   * of the caller's scope and every resource in some Patient compartment, in one sorted stream; the
   * Patients are part of it, so none is held in memory. Its counts are not hinted (the Patients
   * match on their type, the rest on a reference pattern); a user's pages are read on the user's
   * key-order index, in page order, and stop after the page; a client's read its key space on the
   * primary key in key order, and stop after the page too.
   */
  scope(
    ctx: TenantContext,
    version: FhirVersion,
    patientId: string | undefined,
    selection: EverythingSelection,
  ): EverythingScope {
    let compartment: Filter;
    let patient: EverythingScope['patient'];
    let hint: string | undefined;
    let pageHint: string | undefined;
    let clientWide = false;
    if (patientId === undefined) {
      pageHint = keyOrderIndex(ctx);
      clientWide = ctx.userId === null;
      if (clientWide) {
        // the client's key space bounds the primary key's scan
        const { prefix, end } = clientKeySpace(ctx, version);
        compartment = { $and: [anyPatientCompartmentFilter(), { _id: { $gte: prefix, $lt: end } }] };
      } else compartment = anyPatientCompartmentFilter();
    } else {
      patient = { id: patientId, key: this.repository.key(ctx, version, 'Patient', patientId) };
      compartment = {
        'idx.ref': patientCompartmentKey(patientId),
        // a Patient that links to itself is served once, as the Patient
        _id: { $ne: patient.key },
      };
      hint = INDEX_NAMES.ref;
    }
    const careDates = careDateCondition(selection.start, selection.end);
    const conditions: Filter[] = [compartment];
    if (careDates) conditions.push(careDates);
    if (selection.types) conditions.push(typeAmong(selection.types));
    if (selection.since) conditions.push({ lu: { $gte: selection.since } });
    const served = conditions.length === 1 ? compartment : { $and: conditions };
    return {
      compartment,
      served,
      hint,
      pageHint,
      patient,
      order: patient ? COMPARTMENT_ORDER : clientWide ? CLIENT_PAGE_ORDER : PAGE_ORDER,
    };
  }

  /**
   * Per type, how many resources are served; the resources referenced outside the compartment
   * (from the whole compartment, whatever the selection serves), by size. One pass over the
   * compartment in the database, and one read by key of the outside resources.
   */
  async counts(
    ctx: TenantContext,
    version: FhirVersion,
    scope: EverythingScope,
  ): Promise<{ types: TypeCount[]; outside: SizedRef[] }> {
    const { compartment, served, hint } = scope;
    const referencePattern = outsideReferencePattern(version);
    const ownPattern = served === compartment ? referencePattern : undefined;
    const [types, referencing] = await Promise.all([
      this.repository.countByType(ctx, version, served, { hint, referencePattern: ownPattern }),
      served === compartment
        ? undefined
        : this.repository.countByType(ctx, version, compartment, { hint, referencePattern }),
    ]);
    const outsideKeys = outsideTargets((referencing ?? types).flatMap((row) => row.references)).map((ref) =>
      this.repository.key(ctx, version, ref.type, ref.id),
    );
    const outside = await this.repository.sizesOf(
      ctx,
      version,
      { _id: { $in: outsideKeys } },
      outsideKeys.length,
    );
    return { types, outside };
  }

  /**
   * Served compartment resources `[skip, skip + limit)` in the scope's order, by key and size, with
   * the JSON of those within `jsonUpTo` bytes together (`sizesOf`).
   */
  compartmentPage(
    ctx: TenantContext,
    version: FhirVersion,
    scope: EverythingScope,
    skip: number,
    limit: number,
    jsonUpTo?: number,
  ): Promise<WindowRow[]> {
    return this.repository.sizesOf(ctx, version, scope.served, limit, {
      sort: scope.order,
      skip,
      hint: scope.pageHint ?? scope.hint,
      jsonUpTo,
    });
  }

  /**
   * Patient/{id} by key and size, with its JSON when it is within `jsonUpTo` bytes; undefined when
   * it is not in the caller's scope.
   */
  async patient(
    ctx: TenantContext,
    version: FhirVersion,
    scope: EverythingScope,
    jsonUpTo?: number,
  ): Promise<WindowRow | undefined> {
    const key = scope.patient?.key;
    if (key === undefined) return undefined;
    const [found] = await this.repository.sizesOf(ctx, version, { _id: key }, 1, { jsonUpTo });
    return found;
  }

  /** Up to `limit` resources of Patient/{id}'s compartment (the Patient itself not among them), by key. */
  compartmentBatch(ctx: TenantContext, version: FhirVersion, patientId: string, limit: number) {
    const compartment = {
      'idx.ref': patientCompartmentKey(patientId),
      _id: { $ne: this.repository.key(ctx, version, 'Patient', patientId) },
    };
    return this.repository.findFields(ctx, version, compartment, {}, limit);
  }

  /** The Provenances one of whose targets is among `references` (`Type/id`), with their JSON. */
  provenancesTargeting(
    ctx: TenantContext,
    version: FhirVersion,
    references: readonly string[],
    limit: number,
  ) {
    return this.repository.findFields(
      ctx,
      version,
      // target `Type/id/_history/n` is indexed as `Type/id`
      { t: 'Provenance', 'idx.ref': { $in: references.map((ref) => `target|${ref}`) } },
      { json: 1, vid: 1 },
      limit,
    );
  }
}
