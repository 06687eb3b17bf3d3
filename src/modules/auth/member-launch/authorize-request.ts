import type { ClientRecord } from '../clients/client.schema';
import { grantableScopes } from './launch-scopes';

/** FHIR versions served, by the last segment of their base URL (the `aud` of a launch). */
export const LAUNCH_VERSIONS = ['r4', 'stu3', 'dstu2'] as const;

/** A validated authorize request (SMART App Launch 2.2 §2.1.6 standalone launch). */
export interface AuthorizeRequest {
  app: ClientRecord;
  redirectUri: string;
  state: string;
  scopes: string[];
  version: string;
  codeChallenge?: string;
  nonce?: string;
}

/**
 * RFC 6749 §4.1.2.1: with an unknown client or redirect URI the user agent is NOT sent back (an
 * error page: `page`); once both are known, every other error goes back to the app (`redirect`).
 */
export type AuthorizeOutcome =
  | { ok: AuthorizeRequest }
  | { page: string }
  | {
      redirect: {
        uri: string;
        error: 'invalid_request' | 'unsupported_response_type' | 'invalid_scope' | 'unauthorized_client';
        description: string;
        state?: string;
      };
    };

const MAX_PARAM = 2000;
const PKCE_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

/** Validates the parameters; `app` is the enabled client named by client_id (null: unknown/disabled). */
export function checkAuthorizeRequest(
  params: Record<string, unknown>,
  app: ClientRecord | null,
  fhirBase: string,
): AuthorizeOutcome {
  const p = (name: string): string | undefined => {
    const v = params[name];
    return typeof v === 'string' && v !== '' ? v : undefined;
  };
  if (!p('client_id')) return { page: 'The request names no app (client_id is missing).' };
  if (!app?.app) return { page: 'The app that sent you here is not registered with this server.' };
  const registered = app.app.redirectUris;
  const asked = p('redirect_uri');
  // exact string comparison (RFC 9700 §4.1.3): no prefix, no normalisation
  const redirectUri = asked ?? (registered.length === 1 ? registered[0] : undefined);
  if (!redirectUri || !registered.includes(redirectUri)) {
    return {
      page: asked
        ? 'The app asked to send you back to an address it did not register. For your safety you were not sent there.'
        : 'The app did not say where to send you back (redirect_uri is missing).',
    };
  }
  const state = p('state');
  const back = (
    error: 'invalid_request' | 'unsupported_response_type' | 'invalid_scope' | 'unauthorized_client',
    description: string,
  ): AuthorizeOutcome => ({ redirect: { uri: redirectUri, error, description, state } });
  if (p('response_type') !== 'code') return back('unsupported_response_type', 'response_type must be code');
  if (!state) return back('invalid_request', 'state is required');
  for (const name of ['state', 'scope', 'aud', 'nonce', 'code_challenge']) {
    if ((p(name)?.length ?? 0) > MAX_PARAM) return back('invalid_request', `${name} is too long`);
  }
  if (!app.programs.includes('patient-access'))
    return back('unauthorized_client', 'the app lacks the patient-access program');
  const aud = p('aud');
  const version = LAUNCH_VERSIONS.find((v) => aud === `${fhirBase}/${v}` || aud === `${fhirBase}/${v}/`);
  if (!version) {
    return back(
      'invalid_request',
      `aud must be the FHIR base URL of this server: ${fhirBase}/r4, /stu3 or /dstu2`,
    );
  }
  const challenge = p('code_challenge');
  const method = p('code_challenge_method');
  if (challenge !== undefined || method !== undefined) {
    if (method !== 'S256')
      return back('invalid_request', 'code_challenge_method must be S256 (plain is not accepted)');
    if (!challenge || !PKCE_CHALLENGE.test(challenge))
      return back(
        'invalid_request',
        'code_challenge must be the base64url SHA-256 of the code_verifier (43 characters)',
      );
  } else if (app.app.public) {
    return back(
      'invalid_request',
      'a public app must send code_challenge with code_challenge_method=S256 (PKCE)',
    );
  }
  const scopes = grantableScopes(p('scope') ?? '');
  if (scopes.length === 0) return back('invalid_scope', 'no scope this server can grant was asked for');
  return {
    ok: {
      app,
      redirectUri,
      state,
      scopes,
      version,
      ...(challenge ? { codeChallenge: challenge } : {}),
      ...(p('nonce') ? { nonce: p('nonce') } : {}),
    },
  };
}

/** The app's redirect URI with the answer's parameters added (its own query kept). */
export function redirectWith(uri: string, params: Record<string, string | undefined>): string {
  const url = new URL(uri);
  for (const [k, v] of Object.entries(params)) if (v !== undefined) url.searchParams.set(k, v);
  return url.toString();
}
