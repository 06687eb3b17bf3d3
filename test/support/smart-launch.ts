import { createHash, randomBytes, randomUUID } from 'crypto';
import request from 'supertest';
import { ClientsService, IssuedSmartApp } from '../../src/modules/auth/clients/clients.service';
import { LaunchRepository } from '../../src/modules/auth/member-launch/launch.repository';
import { TokenService } from '../../src/modules/auth/tokens/token.service';
import { clientHeaders, createClient, createUser, TestClient, TestUser } from './factories';
import type { TestApp } from './test-app';

/**
 * SMART App Launch test data and the browser's part of a standalone launch, driven with supertest
 * (an agent keeps the cookies; forms are read from the pages as a browser would).
 */
export interface SmartMember extends TestUser {
  password: string;
  /** The member's Patient id (R4) in the plan's tenant. */
  patientId: string;
}

/** A plan (a client with patient-access). */
export function createPlan(t: TestApp, name?: string): Promise<TestClient> {
  return createClient(t, { name, programs: ['patient-access'] });
}

/** A SMART app of `plan` (public unless `confidential`). */
export function createSmartApp(
  t: TestApp,
  plan: TestClient,
  opts: { redirectUris?: string[]; confidential?: boolean; name?: string } = {},
): Promise<IssuedSmartApp> {
  return t.app.get(ClientsService).createApp({
    name: opts.name ?? `app ${randomBytes(3).toString('hex')}`,
    customer: plan.customer,
    programs: ['patient-access'],
    redirectUris: opts.redirectUris ?? ['https://app.example/callback'],
    public: !opts.confidential,
  });
}

/** A member of the plan with a sign-in secret and one R4 Patient. */
export async function createMember(t: TestApp, plan: TestClient, family = 'Doe'): Promise<SmartMember> {
  const user = await createUser(t, plan);
  const password = `pw-${randomBytes(8).toString('hex')}`;
  await request(t.server)
    .put('/user-management/v1/user/sign-in-secret')
    .send({
      client_id: plan.client_id,
      client_secret: plan.client_secret,
      app_user_id: user.app_user_id,
      secret: password,
    })
    .expect(200);
  const patient = await request(t.server)
    .post('/r4/Patient')
    .set(clientHeaders(plan, user.service_user_id))
    .set('Content-Type', 'application/fhir+json')
    .send({ resourceType: 'Patient', name: [{ given: ['Jane'], family }], birthDate: '1970-01-01' })
    .expect(201);
  return { ...user, password, patientId: patient.body.id };
}

export interface Pkce {
  verifier: string;
  challenge: string;
}

export function pkce(): Pkce {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/** The value of the hidden or text field `name` of a page's form. */
export function formField(html: string, name: string): string | undefined {
  const m = new RegExp(`name="${name}"[^>]*value="([^"]*)"`).exec(html);
  return m?.[1]
    .replace(/&amp;/g, '&')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'");
}

/** The query parameters of a redirect's Location. */
export function locationParams(res: { headers: Record<string, string> }): URLSearchParams {
  return new URL(res.headers.location, 'http://x').searchParams;
}

/** Opens the sign-in page at `location` and posts the form as the browser would (tx and csrf from the page). */
export async function signInAt(
  agent: ReturnType<typeof request.agent>,
  location: string,
  username: string,
  password: string,
): Promise<request.Response> {
  const page = await agent.get(location).expect(200);
  return agent
    .post('/oauth2/member/sign-in')
    .type('form')
    .send({ tx: formField(page.text, 'tx'), csrf: formField(page.text, 'csrf'), username, password });
}

/**
 * authorize → sign in → consent (approve, every scope ticked unless `scopes`) → the code on the
 * app's redirect. Returns the agent (signed-in browser) and the final redirect's parameters.
 */
export async function launchToCode(
  t: TestApp,
  app: IssuedSmartApp,
  member: SmartMember,
  opts: {
    scope?: string;
    aud?: string;
    pkce?: Pkce;
    scopes?: string[];
    agent?: ReturnType<typeof request.agent>;
  } = {},
): Promise<{ agent: ReturnType<typeof request.agent>; params: URLSearchParams; state: string }> {
  const agent = opts.agent ?? request.agent(t.server);
  const state = randomBytes(8).toString('hex');
  const code = opts.pkce ?? pkce();
  const authorize = await agent
    .get('/oauth2/authorize')
    .query({
      response_type: 'code',
      client_id: app.client_id,
      redirect_uri: app.redirect_uris[0],
      scope: opts.scope ?? 'launch/patient openid fhirUser patient/*.rs offline_access',
      state,
      aud: opts.aud ?? `${t.settings.urls.base}/r4`,
      code_challenge: code.challenge,
      code_challenge_method: 'S256',
    })
    .expect(302);
  let next = authorize.headers.location;
  if (next.startsWith('/oauth2/member/sign-in')) {
    const signIn = await signInAt(agent, next, member.app_user_id, member.password);
    if (signIn.status !== 303) throw new Error(`sign-in failed: ${signIn.status} ${signIn.text}`);
    next = signIn.headers.location;
  }
  const consent = await agent.get(next).expect(200);
  const offered = [...consent.text.matchAll(/name="scope" value="([^"]*)"/g)].map((m) => m[1]);
  const form = new URLSearchParams({
    tx: formField(consent.text, 'tx')!,
    csrf: formField(consent.text, 'csrf')!,
    decision: 'approve',
  });
  for (const s of opts.scopes ?? offered) form.append('scope', s);
  const patient = formField(consent.text, 'patient');
  if (patient) form.set('patient', patient);
  const decided = await agent.post('/oauth2/member/consent').type('form').send(form.toString()).expect(303);
  return { agent, params: locationParams(decided), state };
}

/**
 * An access token of a member's SMART App Launch grant, without the pages: the grant is stored as
 * consent stores it (so the tenant guard's grant check passes and revocation works) and the token
 * is signed as the token endpoint signs it. For tests of scope enforcement, many scope sets each.
 */
export async function launchToken(
  t: TestApp,
  plan: TestClient,
  app: Pick<IssuedSmartApp, 'client_id'>,
  member: Pick<TestUser, 'service_user_id' | 'app_user_id'>,
  opts: { scope: string; patient?: string },
): Promise<string> {
  const scopes = opts.scope.split(' ').filter(Boolean);
  const grant = {
    _id: randomUUID(),
    plan: plan.client_id,
    u: member.service_user_id,
    app_user_id: member.app_user_id,
    app: app.client_id,
    scopes,
    ...(opts.patient !== undefined ? { patient: opts.patient } : {}),
    version: 'r4',
    created: new Date(),
    revoked: false,
  };
  await t.app.get(LaunchRepository).insertGrant(grant);
  return t.app.get(TokenService).signLaunchAccessToken(plan.client_id, member.service_user_id, scopes, {
    app: app.client_id,
    grant: grant._id,
    ...(opts.patient !== undefined ? { patient: opts.patient } : {}),
  });
}
