import { Inject, Injectable } from '@nestjs/common';
import {
  buildCapabilityStatement,
  resourceTypes,
  searchParamsFor,
  type CapabilityOperation,
  type CapabilitySearchParam,
  type FhirVersion,
} from '@app/fhir';
import { SETTINGS } from '../../config/config.module';
import type { Settings } from '../../config/settings';
import { tokenEndpoint, authorizationEndpoint } from '../auth/oauth/smart-configuration';
import { OperationRegistry, type RegisteredOperation } from '../../fhir-http/operation-registry';

/** Interactions of the store, history and conditional routes (https://hl7.org/fhir/R4/http.html). */
const TYPE_INTERACTIONS = [
  'read',
  'vread',
  'update',
  'patch',
  'delete',
  'history-instance',
  'history-type',
  'create',
  'search-type',
];
const SYSTEM_INTERACTIONS: Record<FhirVersion, string[]> = {
  r4: ['transaction', 'batch', 'search-system', 'history-system'],
  stu3: ['transaction', 'batch', 'search-system', 'history-system'],
  // DSTU2's system-restful-interaction has no `batch` code (batch is served all the same)
  dstu2: ['transaction', 'search-system', 'history-system'],
};
const PATCH_FORMATS = ['application/json-patch+json', 'application/fhir+json'];
const BULK_DATA_IG = 'http://hl7.org/fhir/uv/bulkdata/CapabilityStatement/bulk-data';
const STARTED = new Date().toISOString();

/**
 * The operations registered with `@FhirOperation()` (src/fhir-http), one entry per level and
 * definition, as the CapabilityStatement lists them.
 */
function operationsOf(
  registered: readonly RegisteredOperation[],
  version: FhirVersion,
  baseUrl: string,
): CapabilityOperation[] {
  const everyType = resourceTypes(version);
  const seen = new Set<string>();
  return registered.flatMap((op): CapabilityOperation[] => {
    const definition = op.definition ?? `${baseUrl}/OperationDefinition/${op.name}`;
    const types = op.level === 'system' ? [] : [...(op.types ?? everyType)];
    const key = `${op.name} ${definition} ${types.join(',')}`;
    if (seen.has(key)) return [];
    seen.add(key);
    return [{ name: op.name, definition, types }];
  });
}

/** Search result parameters every search takes (https://hl7.org/fhir/R4/search.html). */
const RESULT_PARAMS: CapabilitySearchParam[] = [
  { name: '_count', type: 'number', documentation: 'page size (default 10, at most 100)' },
  { name: '_sort', type: 'string', documentation: 'sort keys, - for descending' },
  { name: '_summary', type: 'token', documentation: 'true, text, data, count' },
  { name: '_elements', type: 'string', documentation: 'top-level elements to return' },
  {
    name: '_total',
    type: 'token',
    documentation:
      'none, estimate (the default: exact up to SEARCH_TOTAL_EXACT_UP_TO matches, else no total) or accurate',
  },
];

/** `_content`: only where the deployment indexes words (FHIR_FULLTEXT=on, docs/storage.md). */
const CONTENT_PARAM: CapabilitySearchParam = {
  name: '_content',
  type: 'string',
  documentation: 'words of the resource text',
};

/** Reference parameters of every type of a version: `Type:param` with their target types. */
function referenceParams(
  version: FhirVersion,
): Array<{ type: string; name: string; targets: readonly string[] }> {
  return resourceTypes(version).flatMap((type) =>
    searchParamsFor(version, type)
      .filter((p) => p.type === 'reference')
      .map((p) => ({ type, name: p.name, targets: p.targets })),
  );
}

/**
 * The CapabilityStatement (Conformance in DSTU2) of one base URL, generated from what is built:
 * every resource type with the search parameters the search lib indexes, the `_include` /
 * `_revinclude` values those make possible (R4/STU3), interactions, conditional support,
 * operations, SMART security and the Bulk Data IG. Built once per version and base.
 */
@Injectable()
export class CapabilityService {
  private readonly cache = new Map<string, string>();

  constructor(
    @Inject(SETTINGS) private readonly settings: Settings,
    private readonly operations: OperationRegistry,
  ) {}

  statementJson(version: FhirVersion, baseUrl: string): string {
    const key = `${version} ${baseUrl}`;
    let json = this.cache.get(key);
    if (!json) {
      json = JSON.stringify(this.build(version, baseUrl));
      this.cache.set(key, json);
    }
    return json;
  }

  private build(version: FhirVersion, baseUrl: string): Record<string, unknown> {
    const includes = version !== 'dstu2';
    const references = includes ? referenceParams(version) : [];
    const includeOf = (type: string) => {
      const own = references.filter((r) => r.type === type).map((r) => `${r.type}:${r.name}`);
      return own.length > 0 ? ['*', ...own] : [];
    };
    const revIncludeOf = (type: string) =>
      references
        .filter((r) => r.targets.length === 0 || r.targets.includes(type))
        .map((r) => `${r.type}:${r.name}`);
    return buildCapabilityStatement({
      version,
      baseUrl,
      software: { name: 'fhir-data-service', version: '0.1.0' },
      resourceTypes: resourceTypes(version),
      typeInteractions: TYPE_INTERACTIONS,
      systemInteractions: SYSTEM_INTERACTIONS[version],
      searchParams: (type) =>
        searchParamsFor(version, type).map((p) => ({
          name: p.name,
          type: p.type,
          definition:
            p.definition ?? `http://hl7.org/fhir/SearchParameter/${type}-${p.name.replace(/^_/, '')}`,
          documentation: p.documentation,
        })),
      searchInclude: includes ? includeOf : undefined,
      searchRevInclude: includes ? revIncludeOf : undefined,
      commonSearchParams: this.settings.fullText ? [CONTENT_PARAM, ...RESULT_PARAMS] : RESULT_PARAMS,
      operations: operationsOf(this.operations.list(), version, baseUrl),
      // compartment search (GET …/{type}, POST …/{type}/_search, GET …/*) serves Patient only
      compartments: ['http://hl7.org/fhir/CompartmentDefinition/patient'],
      instantiates: [BULK_DATA_IG],
      security: {
        tokenUrl: tokenEndpoint(this.settings),
        // members authorize SMART apps in the browser (SMART App Launch standalone launch)
        authorizeUrl: authorizationEndpoint(this.settings),
        description:
          'Bearer tokens from the token endpoint: SMART App Launch (a member authorizes an app at the authorize ' +
          'endpoint), backend authorization codes, client_credentials with a client secret or a signed JWT ' +
          'assertion (SMART Backend Services, system/*.rs); or the client headers.',
      },
      patchFormats: PATCH_FORMATS,
      date: STARTED,
    });
  }
}
