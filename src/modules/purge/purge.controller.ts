import { Controller, Query, Req } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiGatewayTimeoutResponse,
  ApiOkResponse,
  ApiOperation,
  ApiQuery,
  ApiTags,
} from '@nestjs/swagger';
import type { Request, Response } from 'express';
import type { FhirVersion, OperationOutcome } from '@app/fhir';
import { FhirOperation, FhirVersionParam } from '../../fhir-http';
import { Tenant } from '../../tenancy/use-tenant.decorator';
import type { TenantContext } from '../../tenancy/tenant-context';
import { parsePurgeRequest, PURGE_MODES, RawQuery } from './purge-request';
import { PurgeService } from './purge.service';

const OUTCOME_SCHEMA = {
  type: 'object',
  properties: {
    resourceType: { type: 'string', example: 'OperationOutcome' },
    issue: { type: 'array', items: { type: 'object' } },
  },
};

/** Purge: removal of a user's resources for good. Comes before the store's `DELETE /:version/:type`. */
@ApiTags('purge')
@Controller()
export class PurgeController {
  constructor(private readonly purgeService: PurgeService) {}

  @FhirOperation({
    name: 'purge',
    segment: 'purge',
    levels: ['system'],
    methods: ['DELETE'],
    affectsState: true,
    description: 'removes resources of one user, all their versions included, for good',
    route: { tenant: { clientWide: 'never' }, lane: 'bulk' },
  })
  @ApiOperation({
    summary: 'Purge all or filtered resources of one user in one FHIR version',
    description:
      'Removes every matching resource of the user with all its history versions and search index entries, ' +
      'deleted (tombstoned) resources included; read then answers 404. Cannot be undone; the user record stays. ' +
      'Credentials: the user’s bearer token, or client_id + client_secret + x-service-user-id (a numeric id; ' +
      '`client` is refused). Only the client that created the user may purge it (others get 404). ' +
      'Each request runs within a time budget (PURGE_BUDGET_MS, default 30 s): when it runs out, what is ' +
      'removed stays removed and the answer is 504 with an OperationOutcome (issue code `timeout`, counts so ' +
      'far, an estimate of what remains); repeat the same request until it answers 200.',
  })
  @ApiQuery({
    name: '_type',
    required: false,
    description:
      'Comma-separated resource types to purge (e.g. Observation,Provenance); an unknown type is a 400',
  })
  @ApiQuery({
    name: '_before',
    required: false,
    description:
      'Only resources whose current meta.lastUpdated is strictly earlier: a date YYYY-MM-DD (start of that ' +
      'day, UTC) or an instant with a time zone (2024-05-01T12:00:00Z)',
  })
  @ApiQuery({
    name: '_mode',
    required: false,
    enum: PURGE_MODES,
    description: '`delete` (default) removes; `dry-run` only counts what would be removed, per type',
  })
  @ApiOkResponse({
    description:
      'Done (or dry run): OperationOutcome, severity information; one issue per resource type with its counts',
    schema: OUTCOME_SCHEMA,
  })
  @ApiBadRequestResponse({
    description: 'unknown _type, bad _before, unknown _mode or parameter, or x-service-user-id: client',
    schema: OUTCOME_SCHEMA,
  })
  @ApiGatewayTimeoutResponse({
    description:
      'Budget spent before the end: OperationOutcome (code timeout) with what was removed so far and an ' +
      'estimate of what remains; nothing is left half removed; repeat the same request to continue',
    schema: OUTCOME_SCHEMA,
  })
  purge(
    @Tenant() ctx: TenantContext,
    @FhirVersionParam() version: FhirVersion,
    @Query() query: RawQuery,
    @Req() req: Request,
  ): Promise<OperationOutcome> {
    return this.purgeService.purge(ctx, parsePurgeRequest(version, query), abortOnDisconnect(req.res!));
  }
}

/** Aborts when the client goes away before the answer is sent: the purge stops after its batch. */
function abortOnDisconnect(res: Response): AbortSignal {
  const controller = new AbortController();
  // Gone already (before the guard finished), or going later.
  if (res.req.socket?.destroyed) controller.abort();
  res.on('close', () => {
    if (!res.writableFinished) controller.abort();
  });
  return controller.signal;
}
