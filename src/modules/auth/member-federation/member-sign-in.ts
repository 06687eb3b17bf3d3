import { BadRequestException } from '@nestjs/common';

/**
 * How a health plan's members sign in to authorize a SMART app: with a sign-in secret the plan's
 * backend set on this server ("builtin", the default), or at the plan's own OpenID Connect
 * provider ("federated"), whose ID token names the member in one claim (the member's app_user_id).
 */
export type MemberSignInDoc =
  | { mode: 'builtin' }
  | {
      mode: 'federated';
      issuer: string;
      client_id: string;
      client_secret: string;
      /** The ID token claim holding the member's app_user_id (`sub` unless the plan says otherwise). */
      claim: string;
      /** Scopes asked of the provider (`openid`, plus whatever makes it put the claim in the ID token). */
      scope: string;
    };

/** What other modules see of a plan's sign-in settings: never the provider's client secret. */
export type MemberSignInView = { mode: 'builtin' } | { mode: 'federated'; issuer: string; claim: string };

export interface FederatedSignInInput {
  issuer: string;
  clientId: string;
  clientSecret: string;
  claim?: string;
  scope?: string;
}

const CLAIM_NAME = /^[A-Za-z0-9_.:-]{1,100}$/;
const SCOPE_TOKEN = /^[\x21\x23-\x5B\x5D-\x7E]+$/;
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * Checks an operator's federated settings. The issuer must be https (OpenID Connect Discovery
 * 1.0 §4.3), except on a loopback address, which is the provider a test or a local set-up runs.
 */
export function federatedSignIn(input: FederatedSignInInput): MemberSignInDoc {
  const problems: string[] = [];
  let issuer = '';
  try {
    const url = new URL(input.issuer);
    const loopback = url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname);
    if (url.protocol !== 'https:' && !loopback) problems.push('the issuer must be an https URL');
    if (url.search || url.hash) problems.push('the issuer has no query or fragment');
    issuer = input.issuer;
  } catch {
    problems.push(`the issuer must be an absolute URL (got "${input.issuer}")`);
  }
  const clientId = input.clientId?.trim() ?? '';
  const clientSecret = input.clientSecret ?? '';
  if (!clientId || clientId.length > 500)
    problems.push('the provider client id is required (at most 500 characters)');
  if (!clientSecret || clientSecret.length > 500) {
    problems.push('the provider client secret is required (at most 500 characters)');
  }
  const claim = input.claim ?? 'sub';
  if (!CLAIM_NAME.test(claim)) problems.push(`the claim must be a claim name (got "${claim}")`);
  const scopes = (input.scope ?? 'openid').split(' ').filter(Boolean);
  if (!scopes.includes('openid')) problems.push('the provider scope must include openid');
  if (!scopes.every((s) => SCOPE_TOKEN.test(s)))
    problems.push('the provider scope has a character RFC 6749 refuses');
  if (problems.length > 0) throw new BadRequestException(problems.join('; '));
  return {
    mode: 'federated',
    issuer,
    client_id: clientId,
    client_secret: clientSecret,
    claim,
    scope: scopes.join(' '),
  };
}

export function viewOfMemberSignIn(doc: MemberSignInDoc | undefined): MemberSignInView {
  if (!doc || doc.mode !== 'federated') return { mode: 'builtin' };
  return { mode: 'federated', issuer: doc.issuer, claim: doc.claim };
}
