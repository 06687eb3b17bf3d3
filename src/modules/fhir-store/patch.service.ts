import { Injectable } from '@nestjs/common';
import {
  applyFhirPathPatch,
  applyJsonPatch,
  FhirPathSandbox,
  OperationOutcomeError,
  type FhirPathSelect,
  type FhirVersion,
} from '@app/fhir';
import { timedOnLoop, timedOnLoopBetween } from '../../admission/event-loop-time';
import { FhirPathTurns } from '../../admission/fhirpath-turns';
import type { TenantContext } from '../../tenancy/tenant-context';
import { written, type Written } from '../../fhir-http/results';
import type { PatchDocument } from '../../fhir-http/patch-body';
import { StorageService } from '../../storage/storage-handle';
import type { BundleWrites } from '../../storage/write-protocol';
import { assertValid, ifMatchVersion } from './fhir-store.service';

/** How often a patch is re-applied when another writer got in between (without If-Match). */
const ATTEMPTS = 5;

/**
 * The patch of a transaction entry (https://hl7.org/fhir/R4/http.html#transaction): a Binary
 * holding a JSON Patch (base64 `data`, contentType application/json-patch+json), or Parameters.
 */
export function entryPatchDocument(resource: Record<string, unknown> | undefined): PatchDocument {
  if (resource?.resourceType === 'Parameters') return { format: 'fhirpath-patch', parameters: resource };
  if (resource?.resourceType === 'Binary' && typeof resource.data === 'string') {
    const text = Buffer.from(resource.data, 'base64').toString('utf8');
    try {
      return { format: 'json-patch', operations: JSON.parse(text) as unknown };
    } catch {
      throw OperationOutcomeError.invalid('the Binary of a PATCH entry does not hold a JSON Patch');
    }
  }
  throw OperationOutcomeError.invalid(
    'a PATCH entry holds a Parameters (FHIRPath Patch) or a Binary (JSON Patch)',
  );
}

/** PATCH is defined from STU3 on (https://hl7.org/fhir/STU3/http.html#patch): DSTU2 answers 405. */
export function assertPatchable(version: FhirVersion): void {
  if (version === 'dstu2') {
    throw new OperationOutcomeError('not-supported', 'PATCH is defined from STU3 on: not on DSTU2', {
      status: 405,
    });
  }
}

/**
 * `PATCH /{v}/{type}/{id}` on R4 and STU3 (https://hl7.org/fhir/R4/http.html#patch): the patch is
 * applied to the current version, the result validated (422 with every issue, nothing stored) and
 * written as the next version with a compare-and-set on the version it was computed from.
 */
@Injectable()
export class PatchService {
  constructor(
    private readonly storage: StorageService,
    private readonly sandbox: FhirPathSandbox,
    private readonly turns: FhirPathTurns,
  ) {}

  /** The caller's FHIRPath, evaluated in its fair turn on the shared worker pool and charged to it. */
  private selectFor(ctx: TenantContext): FhirPathSelect {
    return (version, resource, expression) =>
      this.turns.run(ctx, (held) => this.sandbox.select(version, resource, expression, held));
  }

  /** The version a patch writes (`bundle`: a PATCH entry of a transaction, its Provenance the bundle's). */
  async patch(
    ctx: TenantContext,
    version: FhirVersion,
    type: string,
    id: string,
    document: PatchDocument,
    ifMatchHeader?: string,
    bundle?: BundleWrites,
  ): Promise<Written> {
    assertPatchable(version);
    const ifMatch = ifMatchVersion(ifMatchHeader);
    const store = this.storage.for(ctx);
    for (let attempt = 1; ; attempt++) {
      const current = await store.read(version, type, id);
      if (!current) throw OperationOutcomeError.notFound(`${type}/${id} is not known`);
      if (current.del || current.json === null)
        throw new OperationOutcomeError('deleted', `${type}/${id} was deleted`, { status: 410 });
      if (ifMatch !== undefined && ifMatch !== current.vid) {
        throw new OperationOutcomeError(
          'conflict',
          `If-Match W/"${ifMatch}" does not match the current version of ${type}/${id} (W/"${current.vid}")`,
          { status: 412 },
        );
      }
      // the stored version's parse and the patch's application hold the event loop: charged to
      // the caller as its result's validation is (a patch body of a few bytes may rewrite 1 MB);
      // a FHIRPath Patch's waits for the worker pool are not
      const json = current.json;
      const patched =
        document.format === 'json-patch'
          ? timedOnLoop(ctx, () =>
              applyJsonPatch(JSON.parse(json) as Record<string, unknown>, document.operations),
            )
          : await timedOnLoopBetween(ctx, this.selectFor(ctx), (select) =>
              applyFhirPathPatch(
                select,
                version,
                JSON.parse(json) as Record<string, unknown>,
                document.parameters,
              ),
            );
      this.assertPatchedValid(ctx, version, type, id, patched);
      try {
        const stored = await store.upsert(version, type, id, patched, { ifMatch: current.vid, bundle });
        return written(stored.doc, stored.created);
      } catch (error) {
        // another writer moved the resource meanwhile: re-apply on its version (without If-Match)
        const lost = error instanceof OperationOutcomeError && error.status === 412;
        if (!lost || ifMatch !== undefined || attempt >= ATTEMPTS) throw error;
      }
    }
  }

  /** 422 with the validation outcome: the patch must leave a valid resource of the same type and id. */
  private assertPatchedValid(
    ctx: TenantContext,
    version: FhirVersion,
    type: string,
    id: string,
    patched: Record<string, unknown>,
  ): void {
    if (patched.resourceType !== type || patched.id !== id) {
      throw new OperationOutcomeError('processing', 'a patch may not change resourceType or id', {
        status: 422,
      });
    }
    assertValid(version, patched, type, 422, ctx);
  }
}
