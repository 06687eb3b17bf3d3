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

/**
 * Routing on the cluster (docs/scaling.md): a query that fixes the shard key (client and user) is
 * answered by one shard; one that fixes only the client fans out. The explain suite of every hot
 * query builds on this file.
 */
describe('routing on the cluster (sharded e2e)', () => {
  let t: TestApp;
  let alice: TestUser;
  let clientId: string;

  beforeAll(async () => {
    t = await createTestApp(IDENTITY_TEST_ENV);
    const client = await createClient(t);
    clientId = client.client_id;
    alice = await createUser(t, client);
    await request(t.server)
      .put('/r4/Patient/routing-1')
      .set(bearer(alice.access_token))
      .set('Content-Type', 'application/fhir+json')
      .send(JSON.stringify({ resourceType: 'Patient', id: 'routing-1' }))
      .expect(201);
  });
  afterAll(async () => t?.close());

  const plan = async (filter: object) =>
    JSON.stringify(await t.connection.db!.collection('resources').find(filter).explain());

  it('a read that fixes client and user is not merged from several shards', async () => {
    expect(await plan({ c: clientId, u: alice.service_user_id, t: 'Patient' })).not.toContain('SHARD_MERGE');
  });

  it('a read that fixes only the client fans out to every shard', async () => {
    expect(await plan({ c: clientId, t: 'Patient' })).toContain('SHARD_MERGE');
  });
});
