import { Inject, Injectable } from '@nestjs/common';
import { OperationOutcomeError } from '@app/fhir';
import { pagingParameter } from '../../common/paging-parameter';
import { SETTINGS } from '../../config/config.module';
import { Settings } from '../../config/settings';
import { SYSTEM_TYPES, SystemType } from './directory-entry';
import { searchsetBundle, SYSTEM_TYPE_CODE_SYSTEM, toEndpoint, toOrganization } from './directory-fhir';
import { DirectoryService } from './directory.service';

export const DIRECTORY_FHIR_PATH = '/directory/r4';
const DEFAULT_COUNT = 10;
const MAX_COUNT = 100;
const ORGANIZATION_PARAMS = new Set(['name', 'type', '_count', '_offset', '_tag']);

function single(params: Record<string, unknown>, name: string): string | undefined {
  const value = params[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw OperationOutcomeError.invalid(`${name} may be given once`);
  return value;
}

/** `type` accepts the system type (`HealthSystem`, or `<system>|HealthSystem`). */
function parseType(value: string | undefined): SystemType | undefined {
  if (value === undefined || value === '') return undefined;
  const [system, code] = value.includes('|') ? value.split('|', 2) : [undefined, value];
  if (
    (system !== undefined && system !== SYSTEM_TYPE_CODE_SYSTEM) ||
    !SYSTEM_TYPES.includes(code as SystemType)
  ) {
    throw OperationOutcomeError.invalid(
      `type must be one of ${SYSTEM_TYPES.join(', ')} (optionally prefixed by ${SYSTEM_TYPE_CODE_SYSTEM}|)`,
    );
  }
  return code as SystemType;
}

/** The read-only FHIR R4 view of the directory (docs/api.md §11); see directory-fhir.ts. */
@Injectable()
export class DirectoryFhirService {
  constructor(
    private readonly directory: DirectoryService,
    @Inject(SETTINGS) private readonly settings: Settings,
  ) {}

  /**
   * `GET /directory/r4/Organization`: `name` matches like `/api/search` `query` (word prefixes of
   * name, address line and city; accent- and case-insensitive), `type` the system type,
   * `_count` (≤ 100) and `_offset` page. Unknown parameters → 400 (strict handling).
   */
  async searchOrganizations(params: Record<string, unknown>): Promise<Record<string, unknown>> {
    const unknown = Object.keys(params).filter((k) => !ORGANIZATION_PARAMS.has(k));
    if (unknown.length > 0)
      throw OperationOutcomeError.invalid(`unknown search parameter(s): ${unknown.join(', ')}`);
    const tag = single(params, '_tag');
    if (tag !== undefined && tag !== 'directory' && !tag.endsWith('|directory')) {
      throw OperationOutcomeError.invalid('only _tag=directory is served here');
    }
    const name = single(params, 'name');
    const systemType = parseType(single(params, 'type'));
    const count = pagingParameter('_count', single(params, '_count'), {
      fallback: DEFAULT_COUNT,
      max: MAX_COUNT,
      overMax: 'refuse',
    });
    const offset = pagingParameter('_offset', single(params, '_offset'), {
      fallback: 0,
      max: this.directory.maxOffset,
      overMax: 'refuse',
    });
    const page = await this.directory.find(name, systemType, offset, count);
    const query = new URLSearchParams();
    if (name !== undefined) query.set('name', name);
    if (systemType) query.set('type', systemType);
    const base = `${this.settings.urls.base}${DIRECTORY_FHIR_PATH}`;
    const qs = query.toString();
    return searchsetBundle({
      total: page.total,
      offset,
      count,
      resources: page.entries.map(toOrganization),
      selfBase: `${base}/Organization${qs ? `?${qs}` : ''}`,
      fullUrlBase: base,
    });
  }

  async readOrganization(id: string): Promise<Record<string, unknown>> {
    const entry = await this.directory.findById(id);
    if (!entry) throw OperationOutcomeError.notFound(`Organization/${id} is not in the directory`);
    return toOrganization(entry);
  }

  async readEndpoint(id: string): Promise<Record<string, unknown>> {
    const entry = await this.directory.findById(id);
    const endpoint = entry ? toEndpoint(entry) : null;
    if (!endpoint) throw OperationOutcomeError.notFound(`Endpoint/${id} is not in the directory`);
    return endpoint;
  }
}
