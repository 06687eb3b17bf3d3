import request from 'supertest';
import {
  bearer,
  createClient,
  createTestApp,
  createUser,
  IDENTITY_TEST_ENV,
  TestApp,
  TestUser,
} from '@app/testing';

const MAX_ARRAY = 5;
const MAX_BYTES = 4096;

/**
 * One set of limits on every stored resource, whatever the route (docs/security.md): the result
 * that would be stored is checked where every version is built (WriteProtocol.buildDoc), so PATCH
 * results and bundle entries meet the same MAX_RESOURCE_BYTES (413), MAX_ARRAY_LENGTH and string
 * rules (400) as a POST body; nothing is stored on refusal.
 */
describe('security: the same caps on every write path (e2e)', () => {
  let t: TestApp;
  let alice: TestUser;
  const fhir = 'application/fhir+json';
  const jsonPatch = 'application/json-patch+json';
  const patient = (extra: Record<string, unknown> = {}) => ({
    resourceType: 'Patient',
    identifier: [{ system: 'urn:test:caps', value: 'p' }],
    name: [{ family: 'Small' }],
    ...extra,
  });
  const names = (n: number) => Array.from({ length: n }, (_, i) => ({ family: `F${i}` }));
  const big = 'x'.repeat(MAX_BYTES + 100);
  /** Under the limit alone; past it together with a stored resource of `bulky` size. */
  const half = 'h'.repeat(1500);
  const bulky = { address: [{ text: 'y'.repeat(3000) }] };
  const send = (method: 'post' | 'put' | 'patch', path: string, body: unknown, type = fhir) => {
    const agent = request(t.server);
    return agent[method](path)
      .set(bearer(alice.access_token))
      .set('Content-Type', type)
      .send(JSON.stringify(body));
  };
  const create = async (extra: Record<string, unknown> = {}) =>
    (await send('post', '/r4/Patient', patient(extra)).expect(201)).body.id as string;
  /** The stored resource is still version 1 and unchanged. */
  const untouched = async (id: string) => {
    const res = await request(t.server).get(`/r4/Patient/${id}`).set(bearer(alice.access_token)).expect(200);
    expect(res.body.meta.versionId).toBe('1');
    expect(res.body.name).toEqual([{ family: 'Small' }]);
  };
  const storedVersions = () => t.connection.collection('resource_history').countDocuments({ t: 'Patient' });
  const expectRefused = (res: request.Response, status: number, text: RegExp) => {
    expect(res.status).toBe(status);
    expect(res.body.resourceType).toBe('OperationOutcome');
    expect(JSON.stringify(res.body.issue)).toMatch(text);
  };
  const op = (parts: Array<Record<string, unknown>>) => ({ name: 'operation', part: parts });
  const addName = (family: string) =>
    op([
      { name: 'type', valueCode: 'add' },
      { name: 'path', valueString: 'Patient' },
      { name: 'name', valueString: 'name' },
      { name: 'value', valueHumanName: { family } },
    ]);

  beforeAll(async () => {
    t = await createTestApp({
      ...IDENTITY_TEST_ENV,
      MAX_ARRAY_LENGTH: String(MAX_ARRAY),
      MAX_RESOURCE_BYTES: String(MAX_BYTES),
    });
    alice = await createUser(t, await createClient(t));
  });
  afterAll(async () => t?.close());

  describe('create and update bodies', () => {
    it('POST: too many names → 400, too large → 413, nothing stored', async () => {
      const before = await storedVersions();
      expectRefused(await send('post', '/r4/Patient', patient({ name: names(6) })), 400, /MAX_ARRAY_LENGTH/);
      expectRefused(
        await send('post', '/r4/Patient', patient({ name: [{ text: big }] })),
        413,
        /MAX_RESOURCE_BYTES/,
      );
      expect(await storedVersions()).toBe(before);
    });

    it('PUT and conditional PUT: the same limits', async () => {
      const id = await create();
      expectRefused(
        await send('put', `/r4/Patient/${id}`, patient({ id, name: names(6) })),
        400,
        /MAX_ARRAY/,
      );
      expectRefused(
        await send('put', `/r4/Patient/${id}`, patient({ id, name: [{ text: big }] })),
        413,
        /MAX_RES/,
      );
      const cond = '/r4/Patient?identifier=urn:test:caps|p&_id=' + id;
      expectRefused(await send('put', cond, patient({ name: names(6) })), 400, /MAX_ARRAY/);
      await untouched(id);
    });
  });

  describe('JSON Patch (an array body the body guard does not walk)', () => {
    it('a result with too many names → 400, nothing stored', async () => {
      const id = await create();
      const ops = Array.from({ length: MAX_ARRAY }, (_, i) => ({
        op: 'add',
        path: '/name/-',
        value: { family: `G${i}` },
      }));
      expectRefused(
        await send('patch', `/r4/Patient/${id}`, ops, jsonPatch),
        400,
        /Patient\.name repeats 6 times/,
      );
      await untouched(id);
    });

    it('a result over MAX_RESOURCE_BYTES → 413; a NUL in a value → 422', async () => {
      const id = await create();
      const grow = [{ op: 'add', path: '/name/0/text', value: big }];
      expectRefused(await send('patch', `/r4/Patient/${id}`, grow, jsonPatch), 413, /MAX_RESOURCE_BYTES/);
      const nul = [{ op: 'add', path: '/name/0/text', value: 'a\u0000b' }];
      // the validator of the patched result sees it first: 422 (https://hl7.org/fhir/R4/http.html#patch)
      expect((await send('patch', `/r4/Patient/${id}`, nul, jsonPatch)).status).toBe(422);
      await untouched(id);
    });
  });

  describe('FHIRPath Patch', () => {
    it('adds past MAX_ARRAY_LENGTH → 400; a large value → 413; nothing stored', async () => {
      const id = await create();
      const adds = { resourceType: 'Parameters', parameter: names(MAX_ARRAY).map((n) => addName(n.family)) };
      expectRefused(await send('patch', `/r4/Patient/${id}`, adds), 400, /MAX_ARRAY_LENGTH/);
      await untouched(id);
      // the patch document is small; the result it would store is not
      const bulkyId = await create(bulky);
      const large = { resourceType: 'Parameters', parameter: [addName(half)] };
      expectRefused(await send('patch', `/r4/Patient/${bulkyId}`, large), 413, /MAX_RESOURCE_BYTES/);
      await untouched(bulkyId);
    });
  });

  describe('transaction and batch entries', () => {
    const patchEntries = (id: string) => {
      const ops = Array.from({ length: MAX_ARRAY }, (_, i) => ({
        op: 'add',
        path: '/name/-',
        value: { family: `B${i}` },
      }));
      return [
        {
          resource: {
            resourceType: 'Binary',
            contentType: jsonPatch,
            data: Buffer.from(JSON.stringify(ops)).toString('base64'),
          },
          request: { method: 'PATCH', url: `Patient/${id}` },
        },
      ];
    };

    it.each(['transaction', 'batch'])(
      '%s: a JSON Patch entry growing past the limits → 400 for that entry',
      async (type) => {
        const id = await create();
        const res = await send('post', '/r4', {
          resourceType: 'Bundle',
          type,
          entry: patchEntries(id),
        }).expect(200);
        expect(res.body.entry[0].response.status).toBe('400 Bad Request');
        expect(JSON.stringify(res.body.entry[0].response.outcome)).toMatch(/MAX_ARRAY_LENGTH/);
        await untouched(id);
      },
    );

    it('a FHIRPath Patch entry over MAX_RESOURCE_BYTES → 413 for that entry', async () => {
      const id = await create(bulky);
      const res = await send('post', '/r4', {
        resourceType: 'Bundle',
        type: 'batch',
        entry: [
          {
            resource: { resourceType: 'Parameters', parameter: [addName(half)] },
            request: { method: 'PATCH', url: `Patient/${id}` },
          },
        ],
      }).expect(200);
      expect(res.body.entry[0].response.status).toMatch(/^413/);
      await untouched(id);
    });

    it('POST and PUT entries: the same limits, whole bundle refused before any entry runs', async () => {
      const id = await create();
      const before = await storedVersions();
      const res = await send('post', '/r4', {
        resourceType: 'Bundle',
        type: 'batch',
        entry: [
          { resource: patient({ name: names(6) }), request: { method: 'POST', url: 'Patient' } },
          { resource: patient({ id, name: names(6) }), request: { method: 'PUT', url: `Patient/${id}` } },
        ],
      });
      expectRefused(res, 400, /MAX_ARRAY_LENGTH/);
      expect(await storedVersions()).toBe(before);
      await untouched(id);
    });
  });
});
