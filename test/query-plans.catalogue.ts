import request from 'supertest';
import {
  bearer,
  clientHeaders,
  createClient,
  createUser,
  type TestApp,
  type TestClient,
  type TestUser,
} from '@app/testing';
import { loadSyntheaPatients, resourcesOfType, type SyntheaRecord } from '@app/testing/synthea';
import { compartmentTypes } from '../src/storage/search/patient-compartment-filter';

/**
 * The hot paths of the app, as requests: one list that the query-plan suite (every query an index
 * scan, test/query-plans.e2e-spec.ts) and the routing suite on a sharded cluster (every query of a
 * user's credential on one shard, test/sharded/routing.e2e-spec.ts) both run. Neither lists
 * queries by hand: they record what the app sends while it serves these requests.
 */

const FHIR_JSON = 'application/fhir+json';

/** 30 types of the R4 Patient compartment, for an `$everything` restricted by `_type`. */
const EVERYTHING_TYPES = compartmentTypes('r4').types.slice(0, 30);

/** Who sends the request: one user's token, or the client's own credential (every user at once). */
export type Credential = 'user' | 'client';

export interface HotPathFixture {
  t: TestApp;
  client: TestClient;
  alice: TestUser;
  /** One Synthea patient stored for alice. */
  record: SyntheaRecord;
}

export interface HotPath {
  group: string;
  name: string;
  credentials: readonly Credential[];
  /** Serves the request(s) through the app; throws on an unexpected status. */
  run(fixture: HotPathFixture, auth: Record<string, string>): Promise<unknown>;
  /** The index the page query of this search must be servable by, when it is not the obvious one. */
  index?: string;
}

/** The app, one client, alice with one Synthea patient, and a few resources the searches need. */
export async function seedHotPaths(t: TestApp): Promise<HotPathFixture> {
  const client = await createClient(t);
  const alice = await createUser(t, client);
  const [record] = await loadSyntheaPatients(t, bearer(alice.access_token), { count: 1 });
  const extras = [
    {
      resourceType: 'RiskAssessment',
      id: 'risk-1',
      status: 'final',
      subject: { reference: `Patient/${record.patientId}` },
      prediction: [{ probabilityDecimal: 0.25 }],
    },
    {
      resourceType: 'ValueSet',
      id: 'vs-1',
      status: 'active',
      url: 'http://example.org/fhir/ValueSet/vs-1',
    },
  ];
  for (const resource of extras)
    await send(
      t,
      'put',
      `/r4/${resource.resourceType}/${resource.id}`,
      bearer(alice.access_token),
      resource,
      [201],
    );
  return { t, client, alice, record };
}

export function credentialHeaders(fixture: HotPathFixture, credential: Credential): Record<string, string> {
  return credential === 'user' ? bearer(fixture.alice.access_token) : clientHeaders(fixture.client, 'client');
}

async function send(
  t: TestApp,
  method: 'get' | 'put' | 'post' | 'delete',
  path: string,
  headers: Record<string, string>,
  body?: object,
  expected: readonly number[] = [200],
) {
  let req = request(t.server)[method](path).set(headers);
  if (body) req = req.set('Content-Type', FHIR_JSON).send(JSON.stringify(body));
  const res = await req;
  if (!expected.includes(res.status)) {
    throw new Error(`${method.toUpperCase()} ${path}: ${res.status} ${res.text.slice(0, 300)}`);
  }
  return res;
}

const get =
  (path: (f: HotPathFixture) => string) =>
  (f: HotPathFixture, auth: Record<string, string>): Promise<unknown> =>
    send(f.t, 'get', path(f), auth);

const inGroup = (group: string, paths: Array<Omit<HotPath, 'group'>>): HotPath[] =>
  paths.map((path) => ({ ...path, group }));

const both: readonly Credential[] = ['user', 'client'];
const userOnly: readonly Credential[] = ['user'];

const patientRef = (f: HotPathFixture) => `Patient/${f.record.patientId}`;
const family = (f: HotPathFixture) => (f.record.resources[0] as any).name[0].family as string;

const READS = inGroup('reads and history', [
  { name: 'read by id', credentials: both, run: get((f) => `/r4/${patientRef(f)}`) },
  { name: 'version read', credentials: both, run: get((f) => `/r4/${patientRef(f)}/_history/1`) },
  { name: 'instance history', credentials: both, run: get((f) => `/r4/${patientRef(f)}/_history`) },
  { name: 'type history', credentials: both, run: get(() => '/r4/Observation/_history?_count=10') },
  { name: 'system history', credentials: both, run: get(() => '/r4/_history?_count=10') },
]);

const SEARCHES: HotPath[] = (
  [
    [
      'token',
      (f) => {
        const observation = resourcesOfType([f.record], 'Observation')[0];
        return `Observation?code=${encodeURIComponent(`http://loinc.org|${observation.code.coding[0].code}`)}`;
      },
    ],
    ['string', (f) => `Patient?name=${encodeURIComponent(family(f).slice(0, 3))}`],
    ['reference', (f) => `Observation?patient=${patientRef(f)}`],
    ['date', () => 'Observation?date=ge2015-01-01&date=lt2030', 'search_range_buckets'],
    ['number', () => 'RiskAssessment?probability=gt0.2', 'search_range_buckets'],
    ['quantity', () => 'Observation?value-quantity=gt5', 'search_range_buckets'],
    ['uri', () => 'ValueSet?url=http://example.org/fhir/ValueSet/vs-1'],
    ['_id', (f) => `Patient?_id=${f.record.patientId}`],
    ['_lastUpdated', () => 'Observation?_lastUpdated=ge2020-01-01'],
    ['sort by _lastUpdated', () => 'Observation?_sort=-_lastUpdated&_count=5'],
    ['sort by a parameter', (f) => `Observation?patient=${patientRef(f)}&_sort=date&_count=5`],
    // on the reference index, the date tested on the candidates without its range buckets
    [
      'reference and date range',
      (f) => `Observation?patient=${patientRef(f)}&date=ge2015&date=lt2030`,
      'search_references',
    ],
  ] as Array<[string, (f: HotPathFixture) => string, string?]>
).map(([name, path, index]) => ({
  group: 'search parameters',
  name,
  credentials: both,
  run: get((f) => `/r4/${path(f)}`),
  index,
}));

const LINKED = inGroup('includes, chains, $everything', [
  {
    name: '_include',
    credentials: both,
    run: get((f) => `/r4/Observation?patient=${patientRef(f)}&_include=Observation:patient`),
  },
  {
    name: '_revinclude',
    credentials: both,
    run: get((f) => `/r4/Patient?_id=${f.record.patientId}&_revinclude=Observation:patient`),
  },
  {
    name: 'chain',
    credentials: both,
    run: get((f) => `/r4/Observation?patient.family=${encodeURIComponent(family(f))}`),
  },
  { name: '_has', credentials: both, run: get(() => '/r4/Patient?_has:Observation:patient:status=final') },
  { name: '$everything', credentials: both, run: get((f) => `/r4/${patientRef(f)}/$everything`) },
  {
    // many types: none of them may multiply the compartment's reference ranges
    name: '$everything of 30 types',
    credentials: both,
    run: get((f) => `/r4/${patientRef(f)}/$everything?_type=${EVERYTHING_TYPES.join(',')}`),
  },
]);

/** A Basic resource under a business identifier the conditional interactions name. */
const basic = (value: string) => ({
  resourceType: 'Basic',
  identifier: [{ system: 'urn:hot-path', value }],
  code: { text: 'hot path' },
});

const WRITES = inGroup('writes and conditional interactions', [
  {
    name: 'create, update, delete',
    credentials: userOnly,
    run: async (f, auth) => {
      const created = await send(f.t, 'post', '/r4/Basic', auth, basic('plain'), [201]);
      const id = created.body.id as string;
      await send(f.t, 'put', `/r4/Basic/${id}`, auth, { ...basic('plain'), id }, [200]);
      await send(f.t, 'delete', `/r4/Basic/${id}`, auth, undefined, [200, 204]);
    },
  },
  {
    name: 'conditional create (If-None-Exist), new and existing',
    credentials: userOnly,
    run: async (f, auth) => {
      const value = `create-${Math.random().toString(36).slice(2)}`;
      const condition = { ...auth, 'If-None-Exist': `identifier=urn:hot-path|${value}` };
      await send(f.t, 'post', '/r4/Basic', condition, basic(value), [201]);
      await send(f.t, 'post', '/r4/Basic', condition, basic(value), [200]);
    },
  },
  {
    // A small patient of its own: the bundle (ids new and existing: bulk insert, compare-and-set,
    // one Provenance for the bundle), then `$everything` DELETE (compartment, the bundle's
    // Provenance looked up by target and rewritten for the Practitioner that stays).
    name: 'transaction bundle, then $everything DELETE',
    credentials: userOnly,
    run: async (f, auth) => {
      const id = `hot-${Math.random().toString(36).slice(2)}`;
      const entry = (resource: Record<string, unknown>) => ({
        resource,
        request: { method: 'PUT', url: `${String(resource.resourceType)}/${String(resource.id)}` },
      });
      const resources = [
        { resourceType: 'Patient', id },
        { resourceType: 'Practitioner', id: `${id}-dr` },
        {
          resourceType: 'Observation',
          id: `${id}-obs`,
          status: 'final',
          code: { text: 'hot path' },
          subject: { reference: `Patient/${id}` },
          performer: [{ reference: `Practitioner/${id}-dr` }],
        },
      ];
      for (let round = 0; round < 2; round++) {
        await send(f.t, 'post', '/r4', auth, {
          resourceType: 'Bundle',
          type: 'transaction',
          entry: resources.map(entry),
        });
      }
      await send(f.t, 'delete', `/r4/Patient/${id}/$everything`, auth);
    },
  },
  {
    name: 'conditional update, then conditional delete',
    credentials: userOnly,
    run: async (f, auth) => {
      const value = `update-${Math.random().toString(36).slice(2)}`;
      const path = `/r4/Basic?identifier=${encodeURIComponent(`urn:hot-path|${value}`)}`;
      await send(f.t, 'put', path, auth, basic(value), [201]);
      await send(f.t, 'put', path, auth, basic(value), [200]);
      await send(f.t, 'delete', path, auth, undefined, [200, 204]);
    },
  },
]);

const EXPORT_AND_PURGE = inGroup('bulk export and purge', [
  {
    name: 'export manifest and a file',
    credentials: both,
    run: async (f, auth) => {
      const manifest = (await send(f.t, 'get', '/bulk-data/r4/$export', auth)).body;
      const file = new URL(manifest.output[manifest.output.length - 1].url);
      await send(f.t, 'get', file.pathname + file.search, auth);
    },
  },
  {
    // A user of its own (the purge removes everything of the user); waits for the slices to finish.
    name: 'purge',
    credentials: userOnly,
    run: async (f) => {
      const bob = await createUser(f.t, f.client);
      const auth = bearer(bob.access_token);
      await send(
        f.t,
        'post',
        '/r4/Observation',
        auth,
        { resourceType: 'Observation', status: 'final', code: { text: 'doomed' } },
        [201],
      );
      await send(f.t, 'delete', '/r4/purge', auth);
      for (let i = 0; i < 50; i++) {
        const left = await f.t.connection
          .db!.collection('resources')
          .countDocuments({ c: f.client.client_id, u: bob.service_user_id });
        if (left === 0) return;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      throw new Error('the purge did not finish in 5 s');
    },
  },
]);

export const HOT_PATHS: readonly HotPath[] = [
  ...READS,
  ...SEARCHES,
  ...LINKED,
  ...WRITES,
  ...EXPORT_AND_PURGE,
];
