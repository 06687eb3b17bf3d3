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
 * The FHIR JSON mime type of each version: DSTU2 `application/json+fhir`
 * (https://hl7.org/fhir/DSTU2/http.html#mime-type), STU3/R4 `application/fhir+json` with the legacy
 * spelling accepted and echoed when asked for (as HAPI FHIR's server does).
 */
describe('FHIR JSON media types per version (e2e)', () => {
  let t: TestApp;
  let alice: TestUser;
  const auth = () => bearer(alice.access_token);

  beforeAll(async () => {
    t = await createTestApp(IDENTITY_TEST_ENV);
    alice = await createUser(t, await createClient(t));
  });
  afterAll(async () => t?.close());

  it('DSTU2 reads and answers application/json+fhir, as the HAPI DSTU2 client sends it', async () => {
    const created = await request(t.server)
      .post('/dstu2/Patient')
      .set(auth())
      .set('Content-Type', 'application/json+fhir;charset=UTF-8')
      .set('Accept', 'application/json+fhir;q=1.0, application/json;q=0.9')
      .send(JSON.stringify({ resourceType: 'Patient', name: [{ family: ['Mime'] }] }))
      .expect(201);
    expect(created.headers['content-type']).toMatch(/^application\/json\+fhir/);
    const id = created.body.id as string;
    const read = await request(t.server).get(`/dstu2/Patient/${id}`).set(auth()).expect(200);
    expect(read.headers['content-type']).toMatch(/^application\/json\+fhir/);
    const error = await request(t.server).get('/dstu2/Patient/nobody').set(auth()).expect(404);
    expect(error.headers['content-type']).toMatch(/^application\/json\+fhir/);
    const metadata = await request(t.server).get('/dstu2/metadata').expect(200);
    expect(metadata.body.format).toEqual(['application/json+fhir']);
  });

  it('STU3 accepts the legacy type and echoes it when asked for; its default is application/fhir+json', async () => {
    const created = await request(t.server)
      .post('/stu3/Patient')
      .set(auth())
      .set('Content-Type', 'application/json+fhir')
      .set('Accept', 'application/json+fhir')
      .send(JSON.stringify({ resourceType: 'Patient', gender: 'other' }))
      .expect(201);
    expect(created.headers['content-type']).toMatch(/^application\/json\+fhir/);
    const read = await request(t.server).get(`/stu3/Patient/${created.body.id}`).set(auth()).expect(200);
    expect(read.headers['content-type']).toMatch(/^application\/fhir\+json/);
  });

  it('still refuses XML in every version', async () => {
    for (const version of ['r4', 'stu3', 'dstu2']) {
      await request(t.server)
        .post(`/${version}/Patient`)
        .set(auth())
        .set('Content-Type', 'application/xml+fhir')
        .send('<Patient xmlns="http://hl7.org/fhir"/>')
        .expect(415);
      await request(t.server)
        .get(`/${version}/Patient`)
        .set(auth())
        .set('Accept', 'application/xml+fhir')
        .expect(406);
    }
  });
});
