import request from 'supertest';
import { validateResource } from '@app/fhir';
import { createTestApp, TestApp } from '@app/testing';

/** CapabilityStatement / Conformance generated from what is built, at every FHIR and bulk base. */
describe('CapabilityStatement (e2e)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => t?.close());

  const errors = (version: 'r4' | 'stu3' | 'dstu2', body: unknown, type: string) =>
    validateResource(version, body, type).filter((i) => i.severity === 'error');

  it('R4: search parameters with definitions, includes, interactions, conditionals, operations, security', async () => {
    const res = await request(t.server).get('/r4/metadata').expect(200);
    expect(res.headers['content-type']).toBe('application/fhir+json; charset=utf-8');
    expect(res.headers.etag).toBeUndefined();
    const cs = res.body;
    expect(errors('r4', cs, 'CapabilityStatement')).toEqual([]);
    expect(cs.format).toEqual(['application/fhir+json']);
    expect(cs.patchFormat).toEqual(['application/json-patch+json', 'application/fhir+json']);
    expect(cs.instantiates).toEqual(['http://hl7.org/fhir/uv/bulkdata/CapabilityStatement/bulk-data']);
    const rest = cs.rest[0];
    const patient = rest.resource.find((r: any) => r.type === 'Patient');
    const names = patient.searchParam.map((p: any) => p.name);
    expect(names).toEqual(
      expect.arrayContaining(['_id', 'family', 'identifier', 'gender', 'birthdate', 'name']),
    );
    const family = patient.searchParam.find((p: any) => p.name === 'family');
    expect(family).toMatchObject({
      type: 'string',
      definition: 'http://hl7.org/fhir/SearchParameter/individual-family',
    });
    expect(patient.interaction.map((i: any) => i.code)).toEqual(
      expect.arrayContaining(['patch', 'history-type', 'history-instance', 'search-type']),
    );
    expect(patient).toMatchObject({
      versioning: 'versioned-update',
      conditionalCreate: true,
      conditionalRead: 'full-support',
      conditionalUpdate: true,
      conditionalDelete: 'single',
    });
    expect(patient.operation.map((o: any) => o.name).sort()).toEqual([
      'everything',
      'export',
      'meta',
      'validate',
    ]);
    const observation = rest.resource.find((r: any) => r.type === 'Observation');
    expect(observation.searchInclude).toEqual(expect.arrayContaining(['*', 'Observation:subject']));
    expect(patient.searchRevInclude).toEqual(expect.arrayContaining(['Observation:subject']));
    expect(rest.operation.map((o: any) => o.name).sort()).toEqual(['export', 'purge']);
    expect(rest.security.service[0].coding[0].code).toBe('SMART-on-FHIR');
    const oauth = rest.security.extension[0];
    expect(oauth.url).toBe('http://fhir-registry.smarthealthit.org/StructureDefinition/oauth-uris');
    expect(oauth.extension).toEqual([
      { url: 'authorize', valueUri: `${t.settings.urls.auth}/oauth2/authorize` },
      { url: 'token', valueUri: `${t.settings.urls.auth}/oauth2/token` },
    ]);
    // no empty arrays anywhere
    expect(JSON.stringify(cs)).not.toMatch(/\[\]|\{\}/);
  });

  it('STU3 CapabilityStatement and DSTU2 Conformance (acceptUnknown) are valid for their version', async () => {
    const stu3 = await request(t.server).get('/stu3/metadata').expect(200);
    expect(errors('stu3', stu3.body, 'CapabilityStatement')).toEqual([]);
    expect(stu3.body.acceptUnknown).toBe('no');
    const dstu2 = await request(t.server).get('/dstu2/metadata').expect(200);
    expect(dstu2.body.resourceType).toBe('Conformance');
    expect(dstu2.body.acceptUnknown).toBe('no');
    expect(errors('dstu2', dstu2.body, 'Conformance')).toEqual([]);
    expect(dstu2.body.rest[0].interaction.map((i: any) => i.code)).not.toContain('batch');
    expect(dstu2.body.rest[0].resource[0].interaction.map((i: any) => i.code)).not.toContain('patch');
    expect(JSON.stringify(dstu2.body)).not.toMatch(/\[\]|\{\}/);
  });

  it('served at the bulk data bases; SMART configuration relative to every base', async () => {
    const bulk = await request(t.server).get('/bulk-data/r4/metadata').expect(200);
    expect(bulk.body.implementation.url).toBe(`${t.settings.urls.analytics}/bulk-data/r4`);
    expect(bulk.body.rest[0].operation.map((o: any) => o.name)).toContain('export');
    const gateway = await request(t.server).get('/v1/acme/bulk-export/bulk-data/r4/metadata').expect(200);
    expect(gateway.body.fhirVersion).toBe('4.0.1');
    for (const base of ['/r4', '/bulk-data/r4', '/v1/acme/bulk-export/bulk-data/r4']) {
      const smart = await request(t.server).get(`${base}/.well-known/smart-configuration`).expect(200);
      expect(smart.body.token_endpoint).toBe(`${t.settings.urls.auth}/oauth2/token`);
      expect(smart.body.token_endpoint_auth_methods_supported).toContain('private_key_jwt');
      expect(smart.body.token_endpoint_auth_signing_alg_values_supported).toEqual(['RS384', 'ES384']);
    }
    await request(t.server).get('/r5/metadata').expect(404);
  });
});
