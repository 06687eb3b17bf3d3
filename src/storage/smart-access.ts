import {
  FHIR_VERSIONS,
  parseFhirVersion,
  patientCompartmentKey,
  patientCompartmentParams,
  type FhirVersion,
} from '@app/fhir';
import { parseSearchValue } from '@app/fhir/search/search-value-parsers';
import { storedForm } from '@app/fhir/search/stored-params';
import {
  accessOf,
  insufficientScope,
  isWhole,
  PERMISSION_NAMES,
  rulesFor,
  type AccessRule,
  type Permission,
  type ScopeCondition,
} from '../tenancy/smart-scopes';
import type { TenantContext } from '../tenancy/tenant-context';
import { tokenKey, type Filter } from './search/filter-clauses';
import { patientCompartmentFilter } from './search/patient-compartment-filter';

/**
 * SMART scopes (tenancy/smart-scopes.ts) on the stored resources: the condition every read of the
 * `resources` collection carries (ScopedCollection adds it to each read, so searches, includes,
 * `$everything`, counts and pages see only what the scopes allow, and totals stay right), and the
 * test a writer applies to the resource it replaces and to the one it writes.
 */

/** Matches no document: scopes that allow reading nothing. */
const NOTHING: Filter = { _id: { $in: [] } };

/**
 * The condition on current documents readable under the context's scopes (read or search: an
 * `.s`-only scope still returns its resources in searchsets); undefined when everything is.
 * `version`: the version the read is limited to, when it is (the compartment's parameters differ
 * per version; without one, a condition per version).
 */
export function readCondition(ctx: TenantContext, version: string | undefined): Filter | undefined {
  const access = accessOf(ctx);
  const rules = [...access.r, ...access.s];
  if (rules.some((rule) => rule.type === '*' && isWhole(rule))) return undefined;
  if (rules.length === 0) return NOTHING;
  const known = version === undefined ? undefined : parseFhirVersion(version);
  const conditions = rules.map((rule) => ruleCondition(rule, known));
  return conditions.length === 1 ? conditions[0] : { $or: conditions };
}

/**
 * The condition on history rows: they carry no search index, so only the types a scope allows
 * whole are readable. Versions of a resource that a compartment or a search-parameter scope
 * allows are read through its current document (instance history and vread look it up first and
 * stand it in for its missing row); history across resources then shows none of them.
 */
export function historyCondition(ctx: TenantContext): Filter | undefined {
  const access = accessOf(ctx);
  const whole = [...access.r, ...access.s].filter(isWhole);
  if (whole.some((rule) => rule.type === '*')) return undefined;
  if (whole.length === 0) return NOTHING;
  return { t: { $in: [...new Set(whole.map((rule) => rule.type))] } };
}

function ruleCondition(rule: AccessRule, version: FhirVersion | undefined): Filter {
  const parts: Filter[] = [];
  if (rule.type !== '*') parts.push({ t: rule.type });
  if (rule.patient !== undefined) {
    const versions = version ? [version] : FHIR_VERSIONS;
    const each = versions.map((v) => ({
      v,
      ...compartmentCondition(v, rule.patient!, rule.type),
    }));
    parts.push(each.length === 1 ? each[0] : { $or: each });
  }
  for (const condition of rule.conditions)
    parts.push({ 'idx.tok': { $in: conditionKeys(condition, rule.type, version) } });
  return parts.length === 1 ? parts[0] : { $and: parts };
}

/**
 * The Patient compartment of `patient` for `type` (`*`: any type): the Patient itself, and the
 * resources whose compartment parameters reference it (patient-compartment-filter.ts).
 */
function compartmentCondition(version: FhirVersion, patient: string, type: string): Filter {
  if (type === '*') return patientCompartmentFilter(patient);
  const referencing =
    patientCompartmentParams(version, type).length === 0
      ? NOTHING
      : { 'idx.ref': patientCompartmentKey(patient) };
  return type === 'Patient' ? { $or: [{ id: patient }, referencing] } : referencing;
}

/**
 * The token index keys (`idx.tok`) one of which a resource of `type` must hold to meet a scope's
 * condition: a parameter stored as the union of others (`combo-code`, stored-params.ts) is met by
 * any of their keys (and by its own, which data written before holds).
 */
function conditionKeys(condition: ScopeCondition, type: string, version: FhirVersion | undefined): string[] {
  const params = new Set([condition.param]);
  if (type !== '*') {
    for (const v of version ? [version] : FHIR_VERSIONS) {
      const form = storedForm(v, type, condition.param);
      if (form.kind === 'union') for (const part of form.params) params.add(part);
    }
  }
  return [...params].flatMap((param) =>
    condition.values.flatMap((text) => {
      const { key } = tokenKey(param, parseSearchValue('token', text, param));
      return key === undefined ? [] : [key];
    }),
  );
}

// ---- writes -------------------------------------------------------------------------------

/** The parts of a stored resource the write check looks at; `idx` is asked for only when needed. */
export interface WrittenResource {
  readonly v: FhirVersion;
  readonly t: string;
  readonly id: string;
  /** Its search index (`idx`): as built for a new version, or extracted again from a stored one. */
  readonly index: () => object | undefined;
}

/** Whether a resource is within a rule. */
function withinRule(rule: AccessRule, doc: WrittenResource): boolean {
  if (isWhole(rule)) return true;
  const idx = (doc.index() ?? {}) as { ref?: string[]; tok?: string[] };
  if (rule.patient !== undefined && !(doc.t === 'Patient' && doc.id === rule.patient)) {
    if (!idx.ref?.includes(patientCompartmentKey(rule.patient))) return false;
  }
  return rule.conditions.every((condition) =>
    conditionKeys(condition, doc.t, doc.v).some((key) => idx.tok?.includes(key)),
  );
}

/**
 * Refuses (403) a write the scopes do not allow on this resource: the version it replaces (update,
 * delete) or the version it writes (create, update), e.g. an Observation of another patient
 * with `patient/Observation.cruds`, or of another category than a search-parameter scope names.
 */
export function assertMayWrite(ctx: TenantContext, permission: Permission, doc: WrittenResource): void {
  const rules = rulesFor(accessOf(ctx), permission, doc.t);
  if (rules.some((rule) => withinRule(rule, doc))) return;
  throw insufficientScope(
    `the granted scopes do not allow ${PERMISSION_NAMES[permission]} of ${doc.t}/${doc.id}` +
      (rules.length > 0 ? ': it lies outside the patient or the values their scopes name' : ''),
  );
}
