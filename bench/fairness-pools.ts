/**
 * The attacks of bench/fairness.ts on shared pools, within a client, and on refusals
 * (docs/security.md "The cost budget"):
 * - `fhirpath-pool`: FHIRPath Patches whose path is a catastrophic regex (each 422 at
 *   FHIRPATH_TIMEOUT_MS); the victim's own operation is an ordinary FHIRPath Patch of its Patient;
 * - `intra-client`: another user of the victim's own client loops GET of its large Patient,
 *   ignoring Retry-After (the victim is that client's other user);
 * - `wrong-secrets-headers`: FHIR reads with the client headers and wrong secrets from one address
 *   (the failure throttle refuses them; each refusal's server CPU is what it costs the others).
 */
import { httpJson, httpJsonPolitely } from './lib/bench-server';
import type { VictimRequest } from './lib/victim-loop';
import { replaceGenderPatch } from '../test/support/fhirpath-patch';

export type Answer = { status: number; bytes: number; retryAfter?: string };

export interface PoolAttack {
  send: () => Promise<Answer>;
  ignoreRetryAfter: boolean;
  /** The attacker's credentials when they are not the heavy tenant's (its shares are settled before the phase). */
  attacker?: Record<string, string>;
  /** The victim's own operation during this attack, when it is not the name search. */
  victim?: { name: string; request: VictimRequest };
}

export interface PoolAttackContext {
  url: string;
  drain: (
    url: string,
    headers: Record<string, string>,
    method?: 'GET' | 'POST' | 'PATCH',
    body?: string | Buffer,
  ) => Promise<Answer>;
  victimToken: string;
  heavyToken: string;
  victimClient: { client_id: string; client_secret: string };
  heavyClient: { client_id: string; client_secret: string };
  /** A large Patient resource (as the heavy tenant stores). */
  heavyPatient: () => Record<string, unknown>;
}

export const POOL_ATTACKS = ['fhirpath-pool', 'intra-client', 'wrong-secrets-headers'] as const;
export type PoolAttackName = (typeof POOL_ATTACKS)[number];

const fhirJson = { 'Content-Type': 'application/fhir+json' };
const replaceGender = (path: string) => JSON.stringify(replaceGenderPatch(path));

/** Stores what the attacks need and returns them. */
export async function poolAttacks(ctx: PoolAttackContext): Promise<Record<PoolAttackName, PoolAttack>> {
  const auth = (token: string) => ({ Authorization: `Bearer ${token}` });
  const put = async (token: string, id: string, resource: Record<string, unknown>) => {
    const res = await httpJsonPolitely(ctx.url, 'PUT', `/r4/Patient/${id}`, { ...resource, id }, auth(token));
    if (res.status >= 300) throw new Error(`pool attacks setup: ${res.status}`);
  };
  await put(ctx.victimToken, 'victim-patch', { resourceType: 'Patient', gender: 'female' });
  await put(ctx.heavyToken, 'heavy-patch', { resourceType: 'Patient', gender: 'female' });
  // a second user of the victim's client, with a large Patient of its own
  const neighbour = await httpJson(ctx.url, 'POST', '/user-management/v1/user', {
    app_user_id: 'fairness-neighbour',
    client_id: ctx.victimClient.client_id,
    client_secret: ctx.victimClient.client_secret,
  });
  const neighbourToken = String(neighbour.body.access_token);
  await put(neighbourToken, 'neighbour-large', ctx.heavyPatient());
  const catastrophic = `Patient.where('${'a'.repeat(29)}!'.matches('^(a+)+$')).gender`;
  let guess = 0;
  return {
    'fhirpath-pool': {
      send: () =>
        ctx.drain(
          `${ctx.url}/r4/Patient/heavy-patch`,
          { ...auth(ctx.heavyToken), ...fhirJson },
          'PATCH',
          replaceGender(catastrophic),
        ),
      ignoreRetryAfter: true,
      victim: {
        name: 'FHIRPath patch',
        request: {
          url: `${ctx.url}/r4/Patient/victim-patch`,
          method: 'PATCH',
          headers: { ...auth(ctx.victimToken), ...fhirJson },
          body: replaceGender("Patient.where(gender = 'female' or gender = 'male').gender"),
        },
      },
    },
    'intra-client': {
      send: () => ctx.drain(`${ctx.url}/r4/Patient/neighbour-large`, auth(neighbourToken)),
      ignoreRetryAfter: true,
      attacker: auth(neighbourToken),
    },
    'wrong-secrets-headers': {
      send: () =>
        ctx.drain(`${ctx.url}/r4/Patient?name=x`, {
          client_id: ctx.heavyClient.client_id,
          client_secret: `wrong-${guess++}`,
          'x-app-user-id': 'fairness-1',
        }),
      ignoreRetryAfter: true,
    },
  };
}
