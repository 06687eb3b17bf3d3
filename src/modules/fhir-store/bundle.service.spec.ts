import { OperationOutcomeError, type FhirVersion } from '@app/fhir';
import type { Settings } from '../../config/settings';
import type { Found, Removed } from '../../fhir-http/results';
import type { ResourceDoc } from '../../storage/documents';
import type { StorageService } from '../../storage/storage-handle';
import type { BundleWrites, CompletedWrite, NewResource, UpsertOptions } from '../../storage/write-protocol';
import type { TenantContext } from '../../tenancy/tenant-context';
import { BundleService } from './bundle.service';
import type { ConditionalService } from './conditional.service';
import type { FhirStoreService } from './fhir-store.service';
import type { PatchService } from './patch.service';
import type { SearchService } from './search/search.service';

const BASE = 'https://fhir.example';
const ctx: TenantContext = { clientId: 'c', userId: 7, scopes: ['user/*.*'], form: 'user-token' };
const LU = new Date('2026-01-02T03:04:05.000Z');

function docOf(type: string, id: string, vid: number, resource: Record<string, unknown> = {}): ResourceDoc {
  const json = JSON.stringify({ resourceType: type, id, ...resource, meta: { versionId: String(vid) } });
  return { _id: `r4|c|${type}|${id}`, v: 'r4', c: 'c', u: 7, t: type, id, vid, lu: LU, del: false, json };
}

/**
 * A BundleService over fake services and a fake storage handle (no database): `existing` ids are
 * refused by the bulk insert (they exist) and updated to version 2; every call is recorded.
 */
function bundleOver(existing: string[] = []) {
  const calls: string[] = [];
  const provenances: CompletedWrite[][] = [];
  const handle = {
    key: (version: FhirVersion, type: string, id: string) => `${version}|c|${type}|${id}`,
    createMany: (_version: FhirVersion, resources: readonly NewResource[], bundle: BundleWrites) => {
      calls.push(`createMany ${resources.map((r) => `${r.type}/${r.id}`).join(',')}`);
      return Promise.resolve(
        resources.map(({ type, id, resource }) => {
          if (existing.includes(`${type}/${id}`)) return { exists: true as const };
          const doc = docOf(type, id, 1, resource);
          bundle.push({ previous: null, doc });
          return { written: { doc, created: true } };
        }),
      );
    },
    upsert: (
      _version: FhirVersion,
      type: string,
      id: string,
      resource: Record<string, unknown>,
      options: UpsertOptions,
    ) => {
      calls.push(`upsert ${type}/${id}`);
      const doc = docOf(type, id, 2, resource);
      options.bundle?.push({ previous: docOf(type, id, 1), doc, historyWritten: true });
      return Promise.resolve({ doc, created: false });
    },
    recordProvenance: (_version: FhirVersion, bundle: BundleWrites) => {
      provenances.push([...bundle.writes]);
      return Promise.resolve();
    },
  };
  const storage = { for: () => handle } as unknown as StorageService;
  const store = {
    delete: (_ctx: unknown, _v: unknown, type: string, id: string): Promise<Removed> => {
      calls.push(`delete ${type}/${id}`);
      return Promise.resolve({ kind: 'removed', type, id, vid: 3, of: 'resource' });
    },
    read: (_ctx: unknown, _v: unknown, type: string, id: string): Promise<Found> => {
      calls.push(`read ${type}/${id}`);
      if (id === 'missing')
        return Promise.reject(OperationOutcomeError.notFound(`${type}/${id} is not known`));
      return Promise.resolve({ kind: 'found', doc: docOf(type, id, 4) });
    },
  } as unknown as FhirStoreService;
  const settings = { urls: { base: BASE }, searchPageMaxBytes: 1_000_000 } as unknown as Settings;
  const service = new BundleService(
    storage,
    store,
    {} as ConditionalService,
    {} as PatchService,
    {} as SearchService,
    settings,
  );
  return { service, calls, provenances };
}

type Entry = {
  fullUrl?: string;
  resource?: { resourceType: string; id?: string; issue?: unknown[] };
  response: Record<string, unknown>;
};

async function run(service: BundleService, type: string, entry: unknown[], prefer?: string) {
  const page = await service.process(ctx, 'r4', { resourceType: 'Bundle', type, entry }, prefer);
  expect(page.kind).toBe('page');
  return JSON.parse(page.json) as { type: string; entry: Entry[] };
}

describe('BundleService (fake services, no database)', () => {
  it('creates new ids in one bulk insert, updates existing ones, and records one Provenance of all', async () => {
    const { service, calls, provenances } = bundleOver(['Patient/old']);
    const response = await run(service, 'transaction', [
      { resource: { resourceType: 'Patient', id: 'new' }, request: { method: 'PUT', url: 'Patient/new' } },
      { resource: { resourceType: 'Patient', id: 'old' }, request: { method: 'PUT', url: 'Patient/old' } },
    ]);
    expect(response.type).toBe('transaction-response');
    expect(calls).toEqual(['createMany Patient/new,Patient/old', 'upsert Patient/old']);
    expect(response.entry[0]).toMatchObject({
      fullUrl: `${BASE}/r4/Patient/new`,
      resource: { resourceType: 'Patient', id: 'new' },
      response: {
        status: '201 Created',
        location: 'Patient/new/_history/1',
        etag: 'W/"1"',
        lastModified: LU.toISOString(),
      },
    });
    expect(response.entry[1].response).toMatchObject({
      status: '200 OK',
      location: 'Patient/old/_history/2',
    });
    expect(provenances).toHaveLength(1);
    expect(provenances[0].map((w) => `${w.doc.t}/${w.doc.id}/${w.doc.vid}`)).toEqual([
      'Patient/new/1',
      'Patient/old/2',
    ]);
  });

  it('processes deletes, then writes, then reads, whatever the entry order; answers in entry order', async () => {
    const { service, calls } = bundleOver();
    const response = await run(service, 'batch', [
      { request: { method: 'GET', url: 'Patient/p1' } },
      {
        resource: { resourceType: 'Patient' },
        request: { method: 'POST', url: 'Patient' },
        fullUrl: 'urn:uuid:6c1f4c5e-0b0c-4a57-9d1e-3c2b4a1d0e9f',
      },
      { request: { method: 'DELETE', url: 'Observation/o1' } },
    ]);
    expect(calls.map((c) => c.split(' ')[0])).toEqual(['delete', 'createMany', 'read']);
    expect(response.entry[0]).toMatchObject({
      fullUrl: `${BASE}/r4/Patient/p1`,
      resource: { resourceType: 'Patient', id: 'p1' },
      response: { status: '200 OK', etag: 'W/"4"' },
    });
    expect(response.entry[1].response.status).toBe('201 Created');
    expect(response.entry[2].response).toMatchObject({
      status: '200 OK',
      etag: 'W/"3"',
      outcome: { resourceType: 'OperationOutcome' },
    });
    expect(JSON.stringify(response.entry[2].response.outcome)).toContain('Observation/o1 with version 3');
  });

  it("an entry's failure is that entry's response (status and OperationOutcome); the others are served", async () => {
    const { service } = bundleOver();
    const response = await run(service, 'batch', [
      { request: { method: 'GET', url: 'Patient/missing' } },
      { request: { method: 'DELETE', url: 'Patient' } },
      { request: { method: 'GET', url: 'Patient/p2' } },
    ]);
    expect(response.entry[0].response).toMatchObject({
      status: '404 Not Found',
      outcome: { resourceType: 'OperationOutcome', issue: [{ code: 'not-found' }] },
    });
    expect(response.entry[1].response).toMatchObject({ status: '400 Bad Request' });
    expect(JSON.stringify(response.entry[1].response.outcome)).toContain('DELETE needs a url Type/id');
    expect(response.entry[2].response.status).toBe('200 OK');
  });

  it('Prefer: return=minimal leaves written resources out of their entries, not their headers', async () => {
    const { service } = bundleOver();
    const response = await run(
      service,
      'batch',
      [{ resource: { resourceType: 'Patient', id: 'm' }, request: { method: 'PUT', url: 'Patient/m' } }],
      'return=minimal',
    );
    expect(response.entry[0].resource).toBeUndefined();
    expect(response.entry[0].response).toMatchObject({ status: '201 Created', etag: 'W/"1"' });
  });

  it('an invalid resource fails its own entry with every issue, and is never written', async () => {
    const { service, calls } = bundleOver();
    const response = await run(service, 'batch', [
      {
        resource: { resourceType: 'Patient', id: 'bad', gender: 42 },
        request: { method: 'PUT', url: 'Patient/bad' },
      },
    ]);
    expect(response.entry[0].response.status).toBe('400 Bad Request');
    expect(calls).toEqual(['createMany ']);
  });
});
