// Runs the client scenarios with the real, unmodified fhir-kit-client (ESM only, so it
// runs in its own Node process): env FHIR_BASE (e.g. http://127.0.0.1:1234/r4), TOKEN, VERSION.
// Prints one JSON object: { scenarios: [{ name, ok, error? }], bodies: { kind: body } } on stdout.
import { Client } from 'fhir-kit-client';

const { FHIR_BASE, TOKEN, VERSION } = process.env;
const client = new Client({ baseUrl: FHIR_BASE, bearerToken: TOKEN });
const scenarios = [];
const bodies = {};
const stamp = Date.now().toString(36);

async function scenario(name, run) {
  try {
    await run();
    scenarios.push({ name, ok: true });
  } catch (error) {
    scenarios.push({
      name,
      ok: false,
      error: String(error?.response?.data ? JSON.stringify(error.response.data) : (error?.message ?? error)),
    });
  }
}

function check(condition, message) {
  if (!condition) throw new Error(message);
}

// DSTU2 HumanName.family repeats (https://hl7.org/fhir/DSTU2/datatypes.html#HumanName)
const family = VERSION === 'dstu2' ? [`Kit${stamp}`] : `Kit${stamp}`;
const patient = (extra = {}) => ({
  resourceType: 'Patient',
  name: [{ family, given: ['Ada'] }],
  gender: 'female',
  ...extra,
});

let id;
await scenario('CRUD: create, read, update with If-Match, vread', async () => {
  const created = await client.create({ resourceType: 'Patient', body: patient() });
  id = created.id;
  check(created.meta.versionId === '1', 'versionId 1');
  const read = await client.read({ resourceType: 'Patient', id });
  check(read.id === id, 'read the same id');
  const updated = await client.update({
    resourceType: 'Patient',
    id,
    body: { ...read, gender: 'male' },
    options: { headers: { 'If-Match': 'W/"1"' } },
  });
  check(updated.meta.versionId === '2' && updated.gender === 'male', 'update made version 2');
  let refused = false;
  try {
    await client.update({
      resourceType: 'Patient',
      id,
      body: updated,
      options: { headers: { 'If-Match': 'W/"1"' } },
    });
  } catch (error) {
    refused = error?.response?.status === 412;
    bodies.operationOutcome = error?.response?.data;
  }
  check(refused, 'stale If-Match refused with 412');
  const v1 = await client.vread({ resourceType: 'Patient', id, version: '1' });
  check(v1.gender === 'female', 'vread of version 1');
});

await scenario('search paging to the end', async () => {
  for (let i = 0; i < 11; i++) await client.create({ resourceType: 'Patient', body: patient() });
  let bundle = await client.search({
    resourceType: 'Patient',
    searchParams: { family: `Kit${stamp}`, _count: 5 },
  });
  bodies.searchset = bundle;
  let seen = 0;
  let pages = 0;
  while (bundle) {
    seen += (bundle.entry ?? []).length;
    pages += 1;
    bundle = await client.nextPage({ bundle });
    if (pages > 10) throw new Error('paging does not end');
  }
  check(seen === 12, `12 patients over the pages (saw ${seen})`);
  check(pages === 3, `3 pages (got ${pages})`);
});

await scenario('history: instance, type, system; a delete shows as a DELETE entry', async () => {
  const doomed = await client.create({ resourceType: 'Patient', body: patient() });
  await client.delete({ resourceType: 'Patient', id: doomed.id });
  const instance = await client.history({ resourceType: 'Patient', id: doomed.id });
  bodies.history = instance;
  check(instance.type === 'history', 'Bundle.type history');
  check(instance.entry[0].request.method === 'DELETE', 'newest entry is the delete');
  const type = await client.typeHistory({ resourceType: 'Patient' });
  check(type.type === 'history' && type.total >= 14, 'type history');
  const system = await client.systemHistory();
  check(system.type === 'history' && system.total >= type.total, 'system history');
});

await scenario('transaction', async () => {
  const response = await client.transaction({
    body: {
      resourceType: 'Bundle',
      type: 'transaction',
      entry: [
        {
          fullUrl: 'urn:uuid:6f1c1a52-0c3e-4b7e-9d0e-000000000001',
          resource: patient(),
          request: { method: 'POST', url: 'Patient' },
        },
        {
          resource: {
            resourceType: 'Observation',
            status: 'final',
            code: { text: 'weight' },
            subject: { reference: 'urn:uuid:6f1c1a52-0c3e-4b7e-9d0e-000000000001' },
          },
          request: { method: 'POST', url: 'Observation' },
        },
      ],
    },
  });
  bodies.transactionResponse = response;
  const provenances = await client.search({ resourceType: 'Provenance', searchParams: { _count: 1 } });
  bodies.provenance = provenances.entry[0].resource;
  check(response.type === 'transaction-response', 'transaction-response');
  check(
    response.entry.every((e) => e.response.status.startsWith('201')),
    'both created',
  );
});

await scenario('conditional create (If-None-Exist)', async () => {
  const identifier = [{ system: 'urn:kit', value: stamp }];
  const options = { headers: { 'If-None-Exist': `identifier=urn:kit|${stamp}` } };
  const first = await client.create({ resourceType: 'Patient', body: patient({ identifier }), options });
  const second = await client.create({ resourceType: 'Patient', body: patient({ identifier }), options });
  check(first.id === second.id, 'the second create answers the first resource');
  const found = await client.search({
    resourceType: 'Patient',
    searchParams: { identifier: `urn:kit|${stamp}` },
  });
  check(found.total === 1, 'one resource stored');
});

if (VERSION !== 'dstu2') {
  await scenario('patch (JSON Patch)', async () => {
    const patched = await client.patch({
      resourceType: 'Patient',
      id,
      jsonPatch: [{ op: 'replace', path: '/gender', value: 'other' }],
    });
    check(patched.gender === 'other' && patched.meta.versionId === '3', 'patched into version 3');
  });
}

await scenario('compartment search and POST $everything (the client defaults)', async () => {
  const owner = await client.create({ resourceType: 'Patient', body: patient() });
  const stranger = await client.create({ resourceType: 'Patient', body: patient() });
  const observation = (subject) => ({
    resourceType: 'Observation',
    status: 'final',
    code: { text: `kit-${stamp}` },
    subject: { reference: `Patient/${subject}` },
  });
  for (let i = 0; i < 3; i++)
    await client.create({ resourceType: 'Observation', body: observation(owner.id) });
  await client.create({ resourceType: 'Observation', body: observation(stranger.id) });
  const compartment = await client.compartmentSearch({
    resourceType: 'Observation',
    compartment: { resourceType: 'Patient', id: owner.id },
    searchParams: { _count: 2 },
  });
  check(compartment.total === 3, `3 Observations in the compartment (total ${compartment.total})`);
  const next = await client.nextPage({ bundle: compartment });
  check(next && next.entry.length === 1, 'the second page holds the third');
  // the POST form (`postSearch`): POST Patient/{id}/Observation/_search with a form body
  const posted = await client.compartmentSearch({
    resourceType: 'Observation',
    compartment: { resourceType: 'Patient', id: owner.id },
    searchParams: { _count: 2 },
    options: { postSearch: true },
  });
  check(
    posted.total === 3 && posted.entry.length === 2,
    `POST form: 3 in total, 2 on the page (${posted.total})`,
  );
  const postedNext = await client.nextPage({ bundle: posted });
  check(postedNext && postedNext.entry.length === 1, 'POST form: the second page holds the third');
  const everything = await client.operation({ name: '$everything', resourceType: 'Patient', id: owner.id });
  bodies.everything = everything;
  const keys = everything.entry.map((e) => `${e.resource.resourceType}/${e.resource.id}`);
  check(keys.includes(`Patient/${owner.id}`), 'the Patient is in its $everything');
  check(
    keys.filter((k) => k.startsWith('Observation/')).length === 3,
    "its 3 Observations, not the stranger's",
  );
});

await scenario('smartAuthMetadata and capabilityStatement', async () => {
  const auth = await client.smartAuthMetadata();
  check(
    auth.tokenUrl && String(auth.tokenUrl).endsWith('/oauth2/token'),
    `tokenUrl found (${JSON.stringify(auth)})`,
  );
  const statement = await client.capabilityStatement();
  bodies.capabilityStatement = statement;
  check(statement.fhirVersion, 'fhirVersion');
});

process.stdout.write(JSON.stringify({ scenarios, bodies }));
