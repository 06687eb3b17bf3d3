import { parseResourceScope, PERMISSIONS, type Permission } from '../../../tenancy/smart-scopes';

/**
 * The scopes a member can grant an app at authorize (SMART App Launch 2.2 §3 "Scopes and Launch
 * Context", https://hl7.org/fhir/smart-app-launch/scopes-and-launch-context.html), and each one in
 * plain words for the consent page. Unknown or unsupported scopes (EHR `launch`, `system/…`) are
 * dropped, as RFC 6749 §3.3 allows: the token response names what was granted. What a resource
 * scope then allows on FHIR routes is decided where SMART scopes are enforced (ctx.scopes).
 */
const CONTEXT_SCOPES: Record<string, string> = {
  openid: 'Confirm to the app that it is you who signed in',
  fhirUser: 'Tell the app which patient record is yours',
  'launch/patient': 'Know which patient record you choose below',
  offline_access: 'Keep access after you close the app, until you revoke it',
  online_access: 'Keep access while you are using the app',
};

/**
 * A scope a member may grant: a launch-context scope, or a `patient/` or `user/` resource scope in
 * the one grammar that enforces scopes on FHIR routes (src/tenancy/smart-scopes.ts), so nothing is
 * granted that the FHIR routes would read differently.
 */
export function isGrantableScope(scope: string): boolean {
  if (Object.hasOwn(CONTEXT_SCOPES, scope)) return true;
  const parsed = parseResourceScope(scope);
  return parsed !== null && parsed.context !== 'system';
}

/** The known scopes of a space-separated `scope` parameter, once each, in the order asked. */
export function grantableScopes(raw: string): string[] {
  return [...new Set(raw.split(' ').filter(Boolean))].filter(isGrantableScope);
}

const VERBS: Record<Permission, string> = {
  c: 'create',
  r: 'read',
  u: 'change',
  d: 'delete',
  s: 'search',
};

/** One sentence a member can judge (the consent page shows it beside the scope's checkbox). */
export function scopeInWords(scope: string): string {
  if (Object.hasOwn(CONTEXT_SCOPES, scope)) return CONTEXT_SCOPES[scope];
  const parsed = parseResourceScope(scope);
  if (!parsed) return scope;
  const verbs = PERMISSIONS.filter((p) => parsed.permissions.has(p)).map((p) => VERBS[p]);
  const list =
    verbs.length > 1 ? `${verbs.slice(0, -1).join(', ')} and ${verbs[verbs.length - 1]}` : verbs[0];
  const whose = parsed.context === 'patient' ? 'your' : 'the';
  const records = parsed.type === '*' ? `${whose} health records` : `${whose} ${parsed.type} records`;
  const only =
    parsed.conditions.length > 0
      ? ` (only those matching ${parsed.conditions.map((c) => `${c.param} ${c.values.join(' or ')}`).join(', ')})`
      : '';
  return `${capitalise(list)} ${records}${only}`;
}

function capitalise(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}
