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

/** patient/Observation.rs, user/*.read, patient/Observation.rs?category=laboratory */
const RESOURCE_SCOPE =
  /^(patient|user)\/(\*|[A-Z][A-Za-z]{1,63})\.(read|write|\*|c?r?u?d?s?)(\?[^\s]{1,500})?$/;

export function isGrantableScope(scope: string): boolean {
  if (Object.hasOwn(CONTEXT_SCOPES, scope)) return true;
  const m = RESOURCE_SCOPE.exec(scope);
  return m !== null && m[3] !== '';
}

/** The known scopes of a space-separated `scope` parameter, once each, in the order asked. */
export function grantableScopes(raw: string): string[] {
  return [...new Set(raw.split(' ').filter(Boolean))].filter(isGrantableScope);
}

const VERBS: Record<string, string> = {
  c: 'create',
  r: 'read',
  u: 'change',
  d: 'delete',
  s: 'search',
};

/** One sentence a member can judge (the consent page shows it beside the scope's checkbox). */
export function scopeInWords(scope: string): string {
  if (Object.hasOwn(CONTEXT_SCOPES, scope)) return CONTEXT_SCOPES[scope];
  const m = RESOURCE_SCOPE.exec(scope);
  if (!m) return scope;
  const [, who, type, access, query] = m;
  const letters = access === 'read' ? 'rs' : access === 'write' ? 'cud' : access === '*' ? 'cruds' : access;
  const verbs = [...letters].map((l) => VERBS[l]);
  const list =
    verbs.length > 1 ? `${verbs.slice(0, -1).join(', ')} and ${verbs[verbs.length - 1]}` : verbs[0];
  const what = type === '*' ? 'all' : `${type}`;
  const whose = who === 'patient' ? 'your' : 'the';
  const records = type === '*' ? `${whose} health records` : `${whose} ${what} records`;
  const only = query ? ` (only those matching ${decodeQuery(query.slice(1))})` : '';
  return `${capitalise(list)} ${records}${only}`;
}

function capitalise(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

function decodeQuery(q: string): string {
  try {
    return [...new URLSearchParams(q)].map(([k, v]) => `${k} ${v}`).join(', ');
  } catch {
    return q;
  }
}
