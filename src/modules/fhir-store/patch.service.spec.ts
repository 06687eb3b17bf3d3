import type { FhirPathSandbox, FhirVersion } from '@app/fhir';
import type { FhirPathTurns } from '../../admission/fhirpath-turns';
import type { ResourceDoc } from '../../storage/documents';
import type { StorageService } from '../../storage/storage-handle';
import type { TenantContext } from '../../tenancy/tenant-context';
import { PatchService } from './patch.service';

const LU = new Date('2026-01-02T03:04:05.000Z');
/**
 * A stored Patient of ~1 MB in one element (a CodeableConcept of 20,000 codings): its parse holds
 * the loop far longer than validating the bare Patient a patch that removes it leaves.
 */
const CODINGS = Array.from({ length: 20_000 }, (_, i) => ({ system: 'urn:x', code: `code-${i}` }));
const STORED = JSON.stringify({
  resourceType: 'Patient',
  id: 'p',
  maritalStatus: { coding: CODINGS },
  meta: { versionId: '1' },
});
/** What a FHIRPath select waits for the worker pool, long next to the loop time of the patch. */
const WAIT_MS = 300;

function doc(json: string, vid: number): ResourceDoc {
  return {
    _id: 'r4|c|Patient|p',
    v: 'r4',
    c: 'c',
    u: 7,
    t: 'Patient',
    id: 'p',
    vid,
    lu: LU,
    del: false,
    json,
  };
}

/** A PatchService over a storage handle answering from memory (no database) and a select that waits. */
function patchServiceOver() {
  const handle = {
    read: () => Promise.resolve(doc(STORED, 1)),
    upsert: (_v: FhirVersion, _t: string, _id: string, resource: Record<string, unknown>) =>
      Promise.resolve({ doc: doc(JSON.stringify(resource), 2), created: false }),
  };
  const storage = { for: () => handle } as unknown as StorageService;
  // the resource itself selected (the parent of `Patient.maritalStatus`, which the patch deletes): an answer after WAIT_MS
  const sandbox = {
    select: () => new Promise((resolve) => setTimeout(() => resolve([[]]), WAIT_MS)),
  } as unknown as FhirPathSandbox;
  const turns = { run: (_ctx: TenantContext, fn: (held: () => void) => unknown) => fn(() => undefined) };
  return new PatchService(storage, sandbox, turns as unknown as FhirPathTurns);
}

function chargedCaller() {
  const charged: number[] = [];
  const ctx: TenantContext = {
    clientId: 'c',
    userId: 7,
    scopes: ['user/*.*'],
    form: 'user-token',
    chargeLoopMs: (ms: number) => charged.push(ms),
  };
  return { ctx, total: () => charged.reduce((a, b) => a + b, 0) };
}

describe('PatchService: the event loop a patch holds is charged to its caller', () => {
  // the first validation loads the definitions it checks against: not what these tests measure
  beforeAll(() =>
    patchServiceOver().patch(chargedCaller().ctx, 'r4', 'Patient', 'p', {
      format: 'json-patch',
      operations: [{ op: 'remove', path: '/maritalStatus' }],
    }),
  );

  it('a JSON Patch: the parse of the stored version and the application are charged, not only the validation of the (small) result', async () => {
    const service = patchServiceOver();
    const { ctx, total } = chargedCaller();
    const started = performance.now();
    await service.patch(ctx, 'r4', 'Patient', 'p', {
      format: 'json-patch',
      operations: [{ op: 'remove', path: '/maritalStatus' }],
    });
    const wall = performance.now() - started;
    // nothing in the call waits (the storage answers from memory): nearly all its time is loop
    // time. Validating the bare result alone is a fraction of a millisecond next to the ~1.5 MB parse.
    expect(total()).toBeGreaterThan(0.5 * wall);
  });

  it('a FHIRPath Patch: its synchronous parts are charged, its wait for the worker pool is not', async () => {
    const service = patchServiceOver();
    const { ctx, total } = chargedCaller();
    // the parse alone, timed here, as the lower bound of what the patch holds the loop
    const parseStarted = performance.now();
    JSON.parse(STORED);
    const parseMs = performance.now() - parseStarted;
    const started = performance.now();
    await service.patch(ctx, 'r4', 'Patient', 'p', {
      format: 'fhirpath-patch',
      parameters: {
        resourceType: 'Parameters',
        parameter: [
          {
            name: 'operation',
            part: [
              { name: 'type', valueCode: 'delete' },
              { name: 'path', valueString: 'Patient.maritalStatus' },
            ],
          },
        ],
      },
    });
    const wall = performance.now() - started;
    expect(total()).toBeGreaterThan(0.5 * parseMs);
    expect(total()).toBeLessThan(wall - WAIT_MS + 4);
  });
});
