import request from 'supertest';
import {
  bearer,
  createClient,
  createTestApp,
  createUser,
  IDENTITY_TEST_ENV,
  TestApp,
  TestClient,
  TestUser,
} from '@app/testing';

const uuid = (n: number) => `urn:uuid:00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;

/**
 * Issue 16 items 5 and 6: bundles whose entries contradict each other are refused whole, and
 * bodies with invalid UTF-8, control characters or lone surrogates are refused, never repaired.
 */
describe('security: bundle-level refusals and string hygiene (e2e)', () => {
  let t: TestApp;
  let client: TestClient;
  let user: TestUser;
  beforeAll(async () => {
    t = await createTestApp(IDENTITY_TEST_ENV);
    client = await createClient(t);
    user = await createUser(t, client);
  });
  afterAll(async () => t?.close());

  const stored = () => t.connection.collection('resource_history').countDocuments({});
  /** Raw bytes as the body: superagent would otherwise serialise a Buffer under a JSON type. */
  const raw =
    (body: string | Buffer) =>
    (b: unknown): string =>
      // superagent writes what comes back as is; a Buffer passes through unchanged
      (b === body ? body : JSON.stringify(b)) as string;
  const post = (path: string, body: string | Buffer, type = 'application/fhir+json') =>
    request(t.server)
      .post(path)
      .set(bearer(user.access_token))
      .set('Content-Type', type)
      .serialize(raw(body))
      .send(body);
  const bundle = (type: 'transaction' | 'batch', entry: unknown[]) =>
    JSON.stringify({ resourceType: 'Bundle', type, entry });

  describe('bundles (transaction and batch): 400 for the whole bundle, nothing stored', () => {
    const cases: Array<[string, unknown[], RegExp]> = [
      [
        'two entries with one fullUrl',
        [
          {
            fullUrl: uuid(1),
            resource: { resourceType: 'Patient' },
            request: { method: 'POST', url: 'Patient' },
          },
          {
            fullUrl: uuid(1),
            resource: { resourceType: 'Patient' },
            request: { method: 'POST', url: 'Patient' },
          },
        ],
        /fullUrl .* is also the fullUrl of Bundle\.entry\[0\]/,
      ],
      [
        'the same id written twice',
        [
          {
            resource: { resourceType: 'Patient', id: 'twice' },
            request: { method: 'PUT', url: 'Patient/twice' },
          },
          {
            resource: { resourceType: 'Patient', id: 'twice', gender: 'male' },
            request: { method: 'PUT', url: 'Patient/twice' },
          },
        ],
        /acts on Patient\/twice, which Bundle\.entry\[0\] acts on too/,
      ],
      [
        'a created id deleted in the same bundle',
        [
          { resource: { resourceType: 'Patient', id: 'gone' }, request: { method: 'POST', url: 'Patient' } },
          { request: { method: 'DELETE', url: 'Patient/gone' } },
        ],
        /acts on Patient\/gone/,
      ],
      [
        'a urn:uuid reference to no entry',
        [
          {
            fullUrl: uuid(2),
            resource: {
              resourceType: 'Observation',
              status: 'final',
              code: { text: 'x' },
              subject: { reference: uuid(3) },
            },
            request: { method: 'POST', url: 'Observation' },
          },
        ],
        /refers to urn:uuid:0+-0000-4000-8000-0+3, which is the fullUrl of no POST or PUT entry/,
      ],
    ];
    for (const type of ['transaction', 'batch'] as const) {
      for (const [what, entries, message] of cases) {
        it(`${type}: ${what}`, async () => {
          const before = await stored();
          const res = await post('/r4', bundle(type, entries)).expect(400);
          expect(res.body.resourceType).toBe('OperationOutcome');
          expect(res.body.issue[0].diagnostics).toMatch(message);
          expect(res.body.issue[0].diagnostics).toMatch(/nothing was stored/);
          expect(await stored()).toBe(before);
        });
      }
    }
  });

  describe('strings', () => {
    it('invalid UTF-8 in a body → 400 on FHIR, token and user routes (never U+FFFD)', async () => {
      const before = await stored();
      const bad = Buffer.concat([
        Buffer.from('{"resourceType":"Patient","name":[{"family":"M'),
        Buffer.from([0xc3, 0x28, 0xff]),
        Buffer.from('ller"}]}'),
      ]);
      const fhir = await post('/r4/Patient', bad).expect(400);
      expect(fhir.body.resourceType).toBe('OperationOutcome');
      expect(fhir.body.issue[0].diagnostics).toMatch(/not valid UTF-8/);
      const usersBody = Buffer.concat([
        Buffer.from(
          `{"client_id":"${client.client_id}","client_secret":"${client.client_secret}","app_user_id":"a`,
        ),
        Buffer.from([0xed, 0xa0, 0x80]), // an encoded surrogate: not UTF-8
        Buffer.from('"}'),
      ]);
      const users = await request(t.server)
        .post('/user-management/v1/user')
        .set('Content-Type', 'application/json')
        .serialize(raw(usersBody))
        .send(usersBody)
        .expect(400);
      expect(users.body).toEqual({ error: 'bad_request', message: expect.stringMatching(/UTF-8/) });
      const formBody = Buffer.concat([Buffer.from('grant_type='), Buffer.from([0xfe])]);
      const form = await request(t.server)
        .post('/oauth2/token')
        .set('Content-Type', 'application/x-www-form-urlencoded')
        .serialize(raw(formBody))
        .send(formBody)
        .expect(400);
      expect(form.body.message).toMatch(/UTF-8/);
      expect(await stored()).toBe(before);
      // valid multi-byte UTF-8 is of course fine
      const ok = await post(
        '/r4/Patient',
        JSON.stringify({ resourceType: 'Patient', name: [{ family: 'Müller 李 😀' }] }),
      ).expect(201);
      const read = await request(t.server)
        .get(`/r4/Patient/${ok.body.id}`)
        .set(bearer(user.access_token))
        .expect(200);
      expect(read.body.name[0].family).toBe('Müller 李 😀');
    });

    it('control characters below U+0020 (but tab, CR, LF) and lone surrogates in FHIR strings → 400', async () => {
      const before = await stored();
      for (const [family, problem] of [
        ['a\\u0000b', /U\+0000 at position 1/],
        ['\\u001f', /U\+001F/],
        ['x\\u000b', /U\+000B/],
        ['\\ud800', /lone UTF-16 surrogate/],
        ['a\\udc00b', /lone UTF-16 surrogate/],
      ] as const) {
        const res = await post(
          '/r4/Patient',
          `{"resourceType":"Patient","name":[{"family":"${family}"}]}`,
        ).expect(400);
        expect(res.body.issue[0].diagnostics).toMatch(problem);
        expect(res.body.issue[0].expression ?? res.body.issue[0].location).toEqual([
          'Patient.name[0].family',
        ]);
      }
      // in a bundle entry, and in a property name
      const inBundle = await post(
        '/r4',
        `{"resourceType":"Bundle","type":"batch","entry":[{"resource":{"resourceType":"Patient","gender":"\\u0007"},"request":{"method":"POST","url":"Patient"}}]}`,
      ).expect(400);
      expect(inBundle.body.issue[0].diagnostics).toMatch(/^Bundle\.entry\[0\]\.resource\.gender contains/);
      await post('/r4/Patient', '{"resourceType":"Patient","na\\u0001me":[]}').expect(400);
      expect(await stored()).toBe(before);
      // tab, CR, LF and a surrogate pair are allowed
      await post(
        '/r4/Patient',
        '{"resourceType":"Patient","name":[{"text":"a\\tb\\r\\nc \\ud83d\\ude00"}]}',
      ).expect(201);
    });

    it('control characters and lone surrogates in app_user_id → 400 (body, auth-code, list)', async () => {
      const creds = { client_id: client.client_id, client_secret: client.client_secret };
      for (const appUserId of ['a\u0000b', 'line\nbreak', 'tab\there', 'x\u007f', 'a\ud800']) {
        const res = await request(t.server)
          .post('/user-management/v1/user')
          .send({ ...creds, app_user_id: appUserId })
          .expect(400);
        expect(res.body.message).toMatch(/app_user_id contains/);
        await request(t.server)
          .post('/user-management/v1/user/auth-code')
          .send({ ...creds, app_user_id: appUserId })
          .expect(400);
      }
      await request(t.server)
        .get('/user-management/v1/user')
        .query({ app_user_id: 'a\u0001' })
        .set({ ...creds })
        .expect(400);
      await request(t.server)
        .post('/user-management/v1/user')
        .send({ ...creds, app_user_id: 'ordinary user ü' })
        .expect(200);
    });
  });
});
