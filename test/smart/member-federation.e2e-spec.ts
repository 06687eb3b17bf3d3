import {
  createClient,
  createTestApp,
  createUser,
  IDENTITY_TEST_ENV,
  runCliInProcess,
  TestApp,
  TestClient,
} from '@app/testing';
import { ClientsService } from '../../src/modules/auth/clients/clients.service';
import {
  FEDERATED_CALLBACK_PATH,
  MemberFederationService,
  newBrowserBinding,
} from '../../src/modules/auth/member-federation/member-federation.service';
import { ProviderUnavailableError } from '../../src/modules/auth/member-federation/provider-clients';
import { CookieWalker, formAction, linkHref } from './harness/cookie-walker';
import { freePort } from './harness/free-port';
import { startUpstreamProvider, UpstreamProvider } from './harness/upstream-provider';

/**
 * Federated member sign-in against a real OpenID Connect provider (npm oidc-provider in its own
 * process): the code flow with PKCE, the ID token checked against the provider's keys, the member
 * found by the plan's claim; and each way it can fail ends in an RFC 6749 error, never a throw.
 */
describe('member federation (e2e, real OpenID provider)', () => {
  let t: TestApp;
  let base: string;
  let provider: UpstreamProvider;
  let plan: TestClient;
  let memberId: number;
  let federation: MemberFederationService;
  const upstreamClient = { client_id: 'fhir-server', client_secret: 'upstream-secret-1' };
  const savedAuthUrl = process.env.AUTH_URL;

  beforeAll(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    // the CLI (in this process) prints the callback URL of the auth host it is configured with
    process.env.AUTH_URL = base;
    t = await createTestApp({ ...IDENTITY_TEST_ENV, BASE_URL: base, AUTH_URL: base });
    federation = t.app.get(MemberFederationService);
    plan = await createClient(t, { name: 'Federated Health Plan' });
    memberId = (await createUser(t, plan, 'M-1001')).service_user_id;
    provider = await startUpstreamProvider({
      clients: [{ ...upstreamClient, redirect_uris: [`${base}${FEDERATED_CALLBACK_PATH}`] }],
      accounts: {
        alice: { member_id: 'M-1001', email: 'alice@example.org' },
        mallory: { member_id: 'M-9999' },
        'M-1001': {},
      },
    });
    await setFederated(plan, { claim: 'member_id', scope: 'openid member' });
  });
  afterAll(async () => {
    if (savedAuthUrl === undefined) delete process.env.AUTH_URL;
    else process.env.AUTH_URL = savedAuthUrl;
    await provider?.stop();
    await t?.close();
  });

  async function setFederated(client: TestClient, opts: { claim?: string; scope?: string; issuer?: string }) {
    const args = ['client', 'set-member-sign-in', '--client', client.client_id, '--federated'];
    args.push('--issuer', opts.issuer ?? provider.issuer);
    args.push(
      '--oidc-client-id',
      upstreamClient.client_id,
      '--oidc-client-secret',
      upstreamClient.client_secret,
    );
    if (opts.claim) args.push('--claim', opts.claim);
    if (opts.scope) args.push('--oidc-scope', opts.scope);
    return JSON.parse((await runCliInProcess(t, args)).stdout);
  }

  /** Signs `login` in at the provider's own form; resolves with our callback's query. */
  async function signInUpstream(url: string, login: string): Promise<Record<string, string>> {
    const walker = new CookieWalker([provider.issuer]);
    const first = await walker.follow(url);
    if (!first.page) throw new Error(`the provider sent us away at once: ${first.left}`);
    const end = await walker.follow(formAction(first.page), {
      method: 'POST',
      form: { prompt: 'login', login, password: 'any' },
    });
    return callbackQuery(end.left);
  }

  function callbackQuery(left: string | undefined): Record<string, string> {
    if (!left?.startsWith(`${base}${FEDERATED_CALLBACK_PATH}?`)) throw new Error(`not our callback: ${left}`);
    return Object.fromEntries(new URL(left).searchParams);
  }

  it('CLI: the plan is federated, the redirect URI to register is printed, no secret', async () => {
    const out = await setFederated(plan, { claim: 'member_id', scope: 'openid member' });
    expect(out).toEqual({
      client_id: plan.client_id,
      member_sign_in: { mode: 'federated', issuer: provider.issuer, claim: 'member_id' },
      redirect_uri: `${base}${FEDERATED_CALLBACK_PATH}`,
    });
    expect(JSON.stringify(out)).not.toContain(upstreamClient.client_secret);
    const record = await t.app.get(ClientsService).findActive(plan.client_id);
    expect(record?.memberSignIn).toEqual({ mode: 'federated', issuer: provider.issuer, claim: 'member_id' });
  });

  it('CLI: refuses both or neither mode, a plain-http issuer off loopback, a scope without openid', async () => {
    const cli = (args: string[]) =>
      runCliInProcess(t, ['client', 'set-member-sign-in', '--client', plan.client_id, ...args]);
    await expect(cli([])).rejects.toThrow(/exactly one of --builtin and --federated/);
    await expect(cli(['--builtin', '--federated'])).rejects.toThrow(/exactly one/);
    const federated = ['--federated', '--oidc-client-id', 'a', '--oidc-client-secret', 'b'];
    await expect(cli([...federated, '--issuer', 'http://idp.example.org'])).rejects.toThrow(/https/);
    await expect(cli([...federated, '--issuer', 'not a url'])).rejects.toThrow(/absolute URL/);
    await expect(
      cli([...federated, '--issuer', 'https://idp.example.org', '--oidc-scope', 'profile']),
    ).rejects.toThrow(/openid/);
    await expect(
      runCliInProcess(t, ['client', 'set-member-sign-in', '--client', 'no-such-client', '--builtin']),
    ).rejects.toThrow(/no client/);
  });

  it('signs a member in: code flow with PKCE at the provider, the member found by the plan claim', async () => {
    const browser = newBrowserBinding();
    const { url } = await federation.begin(plan.client_id, 'tx-ok', browser);
    const authorize = new URL(url);
    expect(authorize.origin).toBe(provider.issuer);
    expect(authorize.searchParams.get('code_challenge_method')).toBe('S256');
    expect(authorize.searchParams.get('nonce')).toBeTruthy();
    expect(authorize.searchParams.get('scope')).toBe('openid member');
    const query = await signInUpstream(url, 'alice');
    expect(query.code).toBeTruthy();
    expect(await federation.finish(query, browser)).toEqual({
      ok: true,
      tx: 'tx-ok',
      planClientId: plan.client_id,
      userId: memberId,
    });
    // the same answer again: the login was used up
    expect(await federation.finish(query, browser)).toMatchObject({ ok: false, error: 'invalid_request' });
    expect((await federation.finish(query, browser)) as { tx?: string }).not.toHaveProperty('tx');
  });

  it('the sub claim by default; a sign-in for the connected-apps page has no transaction', async () => {
    const subPlan = await createClient(t, { name: 'Sub Plan' });
    const member = await createUser(t, subPlan, 'M-1001');
    await setFederated(subPlan, {});
    const browser = newBrowserBinding();
    const { url } = await federation.begin(subPlan.client_id, undefined, browser);
    expect(new URL(url).searchParams.get('scope')).toBe('openid');
    const query = await signInUpstream(url, 'M-1001');
    expect(await federation.finish(query, browser)).toEqual({
      ok: true,
      planClientId: subPlan.client_id,
      userId: member.service_user_id,
    });
  });

  it('refuses a callback in another browser, an unknown or missing state (no transaction named)', async () => {
    const { url } = await federation.begin(plan.client_id, 'tx-bound', newBrowserBinding());
    const query = await signInUpstream(url, 'alice');
    const other = await federation.finish(query, newBrowserBinding());
    expect(other).toEqual({
      ok: false,
      error: 'invalid_request',
      description: expect.stringMatching(/another browser/),
    });
    expect(await federation.finish(query, undefined)).toMatchObject({ ok: false, error: 'invalid_request' });
    expect(await federation.finish({ ...query, state: 'forged' }, newBrowserBinding())).toMatchObject({
      ok: false,
      error: 'invalid_request',
    });
    expect(await federation.finish({ code: 'x' }, newBrowserBinding())).toMatchObject({
      ok: false,
      error: 'invalid_request',
    });
  });

  it('a person the plan does not know is refused, not created', async () => {
    const browser = newBrowserBinding();
    const { url } = await federation.begin(plan.client_id, 'tx-unknown', browser);
    const result = await federation.finish(await signInUpstream(url, 'mallory'), browser);
    expect(result).toEqual({
      ok: false,
      tx: 'tx-unknown',
      error: 'access_denied',
      description: 'the signed-in person is not a member of this plan',
    });
  });

  it('an ID token without the plan claim names nobody', async () => {
    const noClaim = await createClient(t, { name: 'No Claim Plan' });
    await createUser(t, noClaim, 'M-1001');
    await setFederated(noClaim, { claim: 'member_id' }); // scope openid only: the provider keeps member_id
    const browser = newBrowserBinding();
    const { url } = await federation.begin(noClaim.client_id, 'tx-noclaim', browser);
    const result = await federation.finish(await signInUpstream(url, 'alice'), browser);
    expect(result).toMatchObject({ ok: false, tx: 'tx-noclaim', error: 'access_denied' });
  });

  it('the member cancelling at the provider: access_denied for the app', async () => {
    const browser = newBrowserBinding();
    const { url } = await federation.begin(plan.client_id, 'tx-cancel', browser);
    const walker = new CookieWalker([provider.issuer]);
    const first = await walker.follow(url);
    const end = await walker.follow(linkHref(first.page!, /Cancel/));
    const query = callbackQuery(end.left);
    expect(query.error).toBe('access_denied');
    expect(await federation.finish(query, browser)).toMatchObject({
      ok: false,
      tx: 'tx-cancel',
      error: 'access_denied',
    });
  });

  it('a code the provider refuses (tampered): server_error for the app, nothing trusted', async () => {
    const browser = newBrowserBinding();
    const { url } = await federation.begin(plan.client_id, 'tx-tampered', browser);
    const query = await signInUpstream(url, 'alice');
    const result = await federation.finish({ ...query, code: `${query.code}x` }, browser);
    expect(result).toMatchObject({ ok: false, tx: 'tx-tampered', error: 'server_error' });
  });

  it('a provider that is down: no discovery at the start; temporarily_unavailable at the callback', async () => {
    const deadPlan = await createClient(t, { name: 'Dead Provider Plan' });
    await setFederated(deadPlan, { issuer: `http://127.0.0.1:${await freePort()}` });
    await expect(federation.begin(deadPlan.client_id, 'tx-dead', newBrowserBinding())).rejects.toBeInstanceOf(
      ProviderUnavailableError,
    );

    // a provider of its own, stopped between the member's sign-in there and the code exchange
    const flaky = await startUpstreamProvider({
      clients: [{ ...upstreamClient, redirect_uris: [`${base}${FEDERATED_CALLBACK_PATH}`] }],
      accounts: { alice: { member_id: 'M-1001' } },
    });
    try {
      const flakyPlan = await createClient(t, { name: 'Flaky Provider Plan' });
      await createUser(t, flakyPlan, 'M-1001');
      await setFederated(flakyPlan, { issuer: flaky.issuer, claim: 'member_id', scope: 'openid member' });
      const browser = newBrowserBinding();
      const { url } = await federation.begin(flakyPlan.client_id, 'tx-flaky', browser);
      const walker = new CookieWalker([flaky.issuer]);
      const first = await walker.follow(url);
      const end = await walker.follow(formAction(first.page!), {
        method: 'POST',
        form: { prompt: 'login', login: 'alice', password: 'any' },
      });
      const query = callbackQuery(end.left);
      await flaky.stop();
      expect(await federation.finish(query, browser)).toMatchObject({
        ok: false,
        tx: 'tx-flaky',
        error: 'temporarily_unavailable',
      });
    } finally {
      await flaky.stop();
    }
  });

  it('switching the plan back to built-in ends federated logins under way', async () => {
    const switching = await createClient(t, { name: 'Switching Plan' });
    await createUser(t, switching, 'M-1001');
    await setFederated(switching, { claim: 'member_id', scope: 'openid member' });
    const browser = newBrowserBinding();
    const { url } = await federation.begin(switching.client_id, 'tx-switch', browser);
    const query = await signInUpstream(url, 'alice');
    const out = JSON.parse(
      (
        await runCliInProcess(t, [
          'client',
          'set-member-sign-in',
          '--client',
          switching.client_id,
          '--builtin',
        ])
      ).stdout,
    );
    expect(out).toEqual({ client_id: switching.client_id, member_sign_in: { mode: 'builtin' } });
    expect(await federation.finish(query, browser)).toMatchObject({
      ok: false,
      tx: 'tx-switch',
      error: 'access_denied',
    });
  });
});
