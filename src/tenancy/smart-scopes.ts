import { OperationOutcomeError } from '@app/fhir';
import type { TenantContext } from './tenant-context';

/**
 * SMART App Launch resource scopes
 * (https://hl7.org/fhir/smart-app-launch/scopes-and-launch-context.html): the grammar of v1
 * (`patient/Observation.read`, `user/*.write`, `user/*.*`) and v2 (`patient/*.rs`,
 * `user/Observation.cruds`, `patient/Observation.rs?category=system|code`), and what the scopes
 * of a context allow. Pure: the storage layer turns `accessOf(ctx)` into database conditions
 * (storage/smart-access.ts), the scope guard and bundle entries into refusals (`assertAllowed`).
 */

/** v2 permissions: create, read, update, delete, search. */
export type Permission = 'c' | 'r' | 'u' | 'd' | 's';
export const PERMISSIONS: readonly Permission[] = ['c', 'r', 'u', 'd', 's'];

/** One `name=value[,value]` of a v2 search-parameter scope: the resource must match one value. */
export interface ScopeCondition {
  readonly param: string;
  readonly values: readonly string[];
}

export interface ResourceScope {
  readonly context: 'patient' | 'user' | 'system';
  /** A resource type, or `*`. */
  readonly type: string;
  readonly permissions: ReadonlySet<Permission>;
  /** v2 search-parameter restriction; every condition must hold. Empty: none. */
  readonly conditions: readonly ScopeCondition[];
}

const RESOURCE_SCOPE = /^(patient|user|system)\/([A-Za-z]{1,64}|\*)\.([a-z*]{1,5})(?:\?(.*))?$/;
const V2_PERMISSIONS = /^c?r?u?d?s?$/;
/** Search parameters a scope may restrict on: token parameters matched on their index keys. */
const CONDITION_PARAM = /^[a-z][a-z0-9-]{0,63}$/;

const V1: Record<string, readonly Permission[]> = {
  read: ['r', 's'],
  write: ['c', 'u', 'd'],
  '*': PERMISSIONS,
};

/**
 * One scope string as a resource scope; null for anything else (`openid`, `launch/patient`,
 * `bulk-data`, a malformed or unsupported resource scope: it grants nothing).
 */
export function parseResourceScope(scope: string): ResourceScope | null {
  const match = RESOURCE_SCOPE.exec(scope);
  if (!match) return null;
  const [, context, type, letters, query] = match;
  let permissions: readonly Permission[];
  if (V1[letters]) permissions = V1[letters];
  else if (letters.length > 0 && V2_PERMISSIONS.test(letters)) permissions = [...letters] as Permission[];
  else return null;
  // v2 forbids a query on v1 permission names; a restriction that cannot be read grants nothing
  const conditions = query === undefined ? [] : parseConditions(query);
  if (conditions === null || (query !== undefined && V1[letters])) return null;
  return {
    context: context as ResourceScope['context'],
    type,
    permissions: new Set(permissions),
    conditions,
  };
}

function parseConditions(query: string): ScopeCondition[] | null {
  const conditions: ScopeCondition[] = [];
  let params: URLSearchParams;
  try {
    params = new URLSearchParams(query);
  } catch {
    return null;
  }
  for (const [param, value] of params) {
    const values = value.split(',').filter((v) => v !== '');
    // a token value needs its code (`system|code` or `code`); `system|` alone is not supported
    if (!CONDITION_PARAM.test(param) || values.length === 0 || values.some((v) => /(^|\|)$/.test(v)))
      return null;
    conditions.push({ param, values });
  }
  return conditions.length > 0 ? conditions : null;
}

/** A grant that applies to some resources: of `type` (or `*`), in a compartment, matching conditions. */
export interface AccessRule {
  readonly type: string;
  /** Only the Patient compartment of this Patient id (a `patient/` scope with the launch's patient). */
  readonly patient?: string;
  readonly conditions: readonly ScopeCondition[];
}

/** What a context may do: for each permission, the rules any of which allows it. */
export type Access = Readonly<Record<Permission, readonly AccessRule[]>>;

/**
 * Scopes the credential forms that predate SMART App Launch carry: `bulk-data` reads everything
 * (it is the program realms' read scope), as does a token without any resource scope, which
 * could only be read-only before (docs/api.md §2).
 */
const LEGACY_READ: ResourceScope = {
  context: 'system',
  type: '*',
  permissions: new Set<Permission>(['r', 's']),
  conditions: [],
};

const cache = new WeakMap<readonly string[], Map<string, Access>>();

/**
 * The access of a context's scopes. A `patient/` scope covers the Patient compartment of the
 * launch's patient only; without a launch patient it covers nothing. Memoized per scopes array
 * (tokens share theirs through the verified-token cache).
 */
export function accessOf(ctx: Pick<TenantContext, 'scopes' | 'launch'>): Access {
  const key = ctx.launch ? `launch ${ctx.launch.patient ?? ''}` : '';
  let byLaunch = cache.get(ctx.scopes);
  if (!byLaunch) cache.set(ctx.scopes, (byLaunch = new Map()));
  let access = byLaunch.get(key);
  if (!access) {
    access = computeAccess(ctx.scopes, ctx.launch !== undefined, ctx.launch?.patient);
    byLaunch.set(key, access);
  }
  return access;
}

function computeAccess(scopes: readonly string[], launched: boolean, patient: string | undefined): Access {
  const parsed = scopes.map(parseResourceScope).filter((s): s is ResourceScope => s !== null);
  if (!launched && scopes.includes('bulk-data')) parsed.push(LEGACY_READ);
  if (!launched && parsed.length === 0) parsed.push(LEGACY_READ);
  const access: Record<Permission, AccessRule[]> = { c: [], r: [], u: [], d: [], s: [] };
  for (const scope of parsed) {
    if (scope.context === 'patient' && patient === undefined) continue;
    const rule: AccessRule = {
      type: scope.type,
      conditions: scope.conditions,
      ...(scope.context === 'patient' ? { patient } : {}),
    };
    for (const permission of scope.permissions) access[permission].push(rule);
  }
  return access;
}

/** The rules that may apply to a resource of `type` (undefined: of any type). */
export function rulesFor(access: Access, permission: Permission, type: string | undefined): AccessRule[] {
  return access[permission].filter((rule) => rule.type === '*' || type === undefined || rule.type === type);
}

/** A rule with no compartment and no condition: every resource of its type(s). */
export function isWhole(rule: AccessRule): boolean {
  return rule.patient === undefined && rule.conditions.length === 0;
}

/** Whether every resource of every type is allowed for `permission` (the pre-SMART credentials). */
export function allowsEverything(access: Access, permission: Permission): boolean {
  return access[permission].some((rule) => rule.type === '*' && isWhole(rule));
}

/** True when the context may only read and search: no scope grants c, u or d. */
export function grantsNoWrite(ctx: Pick<TenantContext, 'scopes' | 'launch'>): boolean {
  const access = accessOf(ctx);
  return access.c.length === 0 && access.u.length === 0 && access.d.length === 0;
}

export const PERMISSION_NAMES: Record<Permission, string> = {
  c: 'create',
  r: 'read',
  u: 'update',
  d: 'delete',
  s: 'search',
};

/** 403 `forbidden` with the Bearer challenge of RFC 6750 §3.1. */
export function insufficientScope(message: string): OperationOutcomeError {
  return new OperationOutcomeError('forbidden', message, {
    status: 403,
    headers: { 'WWW-Authenticate': 'Bearer error="insufficient_scope"' },
  });
}

/**
 * Refuses (403) an interaction no scope allows on `type` at all (`type` undefined: on any type,
 * e.g. a system-level search, whose results are then limited by the storage layer). Which
 * resources of the type are allowed is decided on the resources themselves (storage).
 * `whole`: the interaction acts on every resource of the type(s) at once (purge), so only a
 * rule without compartment or condition allows it.
 */
export function assertAllowed(
  ctx: Pick<TenantContext, 'scopes' | 'launch'>,
  permission: Permission,
  type: string | undefined,
  whole = false,
): void {
  const rules = rulesFor(accessOf(ctx), permission, type).filter((rule) => !whole || isWhole(rule));
  if (whole && type === undefined ? !rules.some((rule) => rule.type === '*') : rules.length === 0) {
    const what = type ?? (whole ? 'every resource' : 'any resource type');
    throw insufficientScope(`the granted scopes do not allow ${PERMISSION_NAMES[permission]} of ${what}`);
  }
}

/**
 * The permission an HTTP interaction needs: a read of one resource (`instance`) `r`, a search
 * (type or system level, compartment search) `s`, a create `c`, an update or patch `u`, a delete `d`.
 */
export function permissionOf(method: string, instance: boolean): Permission {
  switch (method.toUpperCase()) {
    case 'GET':
    case 'HEAD':
      return instance ? 'r' : 's';
    case 'POST':
      return 'c';
    case 'PUT':
    case 'PATCH':
      return 'u';
    default:
      return 'd';
  }
}
