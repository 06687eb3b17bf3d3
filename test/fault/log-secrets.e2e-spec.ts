import { randomBytes } from 'crypto';
import { mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import request from 'supertest';
import {
  buildIfNeeded,
  formField,
  locationParams,
  pkce,
  runCli,
  ServerProcess,
  signInAt,
} from '@app/testing';

/**
 * No secret or token in any log line: the real server at the most verbose level goes
 * through every flow that carries a secret, and its captured output is searched for each of them.
 */
describe('logs carry no secrets (e2e)', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'fhir-logs-'));
  const env = {
    MONGO_URL: process.env.TEST_MONGO_URL!,
    MONGO_DB: `logs_${randomBytes(4).toString('hex')}`,
    DATA_DIR: dataDir,
    LOG_LEVEL: 'trace',
    DIRECTORY_SEED: 'false',
  };
  const server = new ServerProcess(env);

  beforeAll(async () => {
    buildIfNeeded();
    await server.start();
  }, 180000);

  afterAll(async () => {
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('never logs client secrets, codes, access, refresh or id tokens', async () => {
    const created = runCli(['client', 'create', '--name', 'log test', '--programs', 'provider-access'], env);
    const { client_id, client_secret } = created.json;
    const secrets: string[] = [client_secret];
    const post = async (path: string, body: Record<string, string>, form = false) => {
      const res = await fetch(`${server.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': form ? 'application/x-www-form-urlencoded' : 'application/json' },
        body: form ? new URLSearchParams(body).toString() : JSON.stringify(body),
      });
      return (await res.json()) as Record<string, string>;
    };
    const user = await post('/user-management/v1/user', {
      app_user_id: 'log-user',
      client_id,
      client_secret,
    });
    secrets.push(user.access_token, user.refresh_token);
    const code = await post('/user-management/v1/user/auth-code', {
      app_user_id: 'log-user',
      client_id,
      client_secret,
      scope: 'openid',
    });
    secrets.push(code.code);
    const tokens = await post(
      '/oauth2/token',
      { grant_type: 'authorization_code', code: code.code, client_id, client_secret },
      true,
    );
    secrets.push(tokens.access_token, tokens.refresh_token, tokens.id_token);
    const refreshed = await post(
      '/oauth2/token',
      { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id, client_secret },
      true,
    );
    secrets.push(refreshed.access_token, refreshed.refresh_token);
    const program = await post(
      '/auth/realms/dev-portal/protocol/openid-connect/token',
      { grant_type: 'client_credentials', client_id, client_secret },
      true,
    );
    secrets.push(program.access_token);
    // a failed attempt with a wrong secret, a FHIR write with each credential form, an error path
    await post(
      '/oauth2/token',
      { grant_type: 'refresh_token', refresh_token: 'nope', client_id, client_secret: 'wrong-secret-value' },
      true,
    );
    await fetch(`${server.url}/r4/Patient`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tokens.access_token}`, 'content-type': 'application/fhir+json' },
      body: JSON.stringify({ resourceType: 'Patient', name: [{ family: 'Secretless' }] }),
    });
    await fetch(`${server.url}/r4/Patient?name=Secretless`, {
      headers: { client_id, client_secret, 'x-service-user-id': String(user.service_user_id) },
    });
    await fetch(`${server.url}/r4/Patient?access_token=${tokens.access_token}`);
    // bulk export file links carry a signed token in their path (redacted from logs)
    const exported = await fetch(`${server.url}/bulk-data/r4/$export`, {
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    const manifest = (await exported.json()) as { output: Array<{ url: string }> };
    expect(manifest.output.length).toBeGreaterThan(0);
    for (const file of manifest.output) {
      const path = new URL(file.url).pathname;
      secrets.push(/\/([^/]+)\.ndjson$/.exec(path)![1]);
      const download = await fetch(`${server.url}${path}`, {
        headers: { authorization: `Bearer ${tokens.access_token}` },
      });
      expect(download.status).toBe(200);
      await download.text();
    }
    await fetch(`${server.url}/bulk-data/r4/$export/Patient/forged-link-token-value.ndjson`, {
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });

    await new Promise((r) => setTimeout(r, 300));
    expect(secrets.every((s) => typeof s === 'string' && s.length > 10)).toBe(true);
    expect(server.output.length).toBeGreaterThan(1000);
    for (const secret of secrets) expect(server.output.includes(secret)).toBe(false);
    expect(server.output).not.toContain('wrong-secret-value');
    expect(server.output).not.toContain('Secretless');
    expect(server.output).not.toContain('forged-link-token-value');
    expect(server.output).toContain('$export/Patient/[redacted].ndjson');
  });

  it('never logs a member sign-in secret, the consent form, the code or the tokens of a SMART App Launch', async () => {
    const plan = runCli(
      ['client', 'create', '--name', 'log plan', '--customer', 'logplan', '--programs', 'patient-access'],
      env,
    ).json;
    const redirect = 'https://app.example/callback';
    const app = runCli(
      [
        'client',
        'create',
        '--name',
        'log app',
        '--customer',
        'logplan',
        '--programs',
        'patient-access',
        '--redirect-uris',
        redirect,
      ],
      env,
    ).json;
    const backend = request(server.url);
    const member = await backend
      .post('/user-management/v1/user')
      .send({ app_user_id: 'log-member', client_id: plan.client_id, client_secret: plan.client_secret })
      .expect(200);
    const password = `member-pw-${randomBytes(8).toString('hex')}`;
    await backend
      .put('/user-management/v1/user/sign-in-secret')
      .send({
        client_id: plan.client_id,
        client_secret: plan.client_secret,
        app_user_id: 'log-member',
        secret: password,
      })
      .expect(200);
    await backend
      .post('/r4/Patient')
      .set({
        client_id: plan.client_id,
        client_secret: plan.client_secret,
        'x-service-user-id': String(member.body.service_user_id),
      })
      .set('Content-Type', 'application/fhir+json')
      .send({ resourceType: 'Patient', name: [{ family: 'Logless' }] })
      .expect(201);

    const browser = request.agent(server.url);
    const { verifier, challenge } = pkce();
    const state = `state-${randomBytes(8).toString('hex')}`;
    const authorize = await browser
      .get('/oauth2/authorize')
      .query({
        response_type: 'code',
        client_id: app.client_id,
        redirect_uri: redirect,
        scope: 'launch/patient openid fhirUser patient/*.rs offline_access',
        state,
        aud: `${server.url}/r4`,
        code_challenge: challenge,
        code_challenge_method: 'S256',
      })
      .expect(302);
    // a wrong secret first (a failed sign-in is logged as a refusal, never with what was typed)
    await signInAt(browser, authorize.headers.location, 'log-member', 'wrong-member-secret');
    const signedIn = await signInAt(browser, authorize.headers.location, 'log-member', password);
    expect(signedIn.status).toBe(303);
    const consent = await browser.get(signedIn.headers.location).expect(200);
    const csrf = formField(consent.text, 'csrf')!;
    const form = new URLSearchParams({ tx: formField(consent.text, 'tx')!, csrf, decision: 'approve' });
    for (const m of consent.text.matchAll(/name="scope" value="([^"]*)"/g)) form.append('scope', m[1]);
    const patient = formField(consent.text, 'patient');
    if (patient) form.set('patient', patient);
    const decided = await browser
      .post('/oauth2/member/consent')
      .type('form')
      .send(form.toString())
      .expect(303);
    const code = locationParams(decided).get('code')!;
    const tokens = await backend
      .post('/oauth2/token')
      .type('form')
      .send({
        grant_type: 'authorization_code',
        code,
        redirect_uri: redirect,
        code_verifier: verifier,
        client_id: app.client_id,
        client_secret: app.client_secret,
      })
      .expect(200);
    await backend.get('/r4/Patient').set('Authorization', `Bearer ${tokens.body.access_token}`).expect(200);
    await backend
      .post('/oauth2/revoke')
      .type('form')
      .send({ token: tokens.body.refresh_token, client_id: app.client_id, client_secret: app.client_secret });

    await new Promise((r) => setTimeout(r, 300));
    const secrets = [
      password,
      csrf,
      code,
      verifier,
      tokens.body.access_token,
      tokens.body.refresh_token,
      tokens.body.id_token,
    ];
    expect(secrets.every((s) => typeof s === 'string' && s.length > 10)).toBe(true);
    for (const secret of secrets) expect(server.output.includes(secret)).toBe(false);
    expect(server.output).not.toContain('wrong-member-secret');
    expect(server.output).not.toContain('Logless');
    expect(server.output).toContain('/oauth2/member/consent');
  });

  it('logs each request under the id its response carries', async () => {
    const given = await fetch(`${server.url}/health`, { headers: { 'x-request-id': 'log-trace-42' } });
    expect(given.headers.get('x-request-id')).toBe('log-trace-42');
    const made = await fetch(`${server.url}/metadata-missing-route`);
    const id = made.headers.get('x-request-id')!;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    await new Promise((r) => setTimeout(r, 300));
    const requestLines = server.output
      .split('\n')
      .filter((line) => line.startsWith('{') && line.includes('"req":'))
      .map((line) => JSON.parse(line) as { req: { id: string; path: string } });
    expect(requestLines.find((l) => l.req.path === '/health' && l.req.id === 'log-trace-42')).toBeDefined();
    expect(
      requestLines.find((l) => l.req.path === '/metadata-missing-route' && l.req.id === id),
    ).toBeDefined();
  });
});
