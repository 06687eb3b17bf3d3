import { Controller, Get, Inject, Param, Req, Res, UseGuards } from '@nestjs/common';
import { ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { buildCapabilityStatement, resourceTypes, type FhirVersion } from '@app/fhir';
import { SETTINGS } from '../../config/config.module';
import type { Settings } from '../../config/settings';
import { operationsOf, searchParamsOf } from './capability.registry';
import { sendReply, versionParam } from './fhir-reply';
import { FhirRouteGuard } from './fhir-route.guard';

/** Interactions the store controller implements (https://hl7.org/fhir/R4/http.html). */
const TYPE_INTERACTIONS = ['read', 'vread', 'update', 'delete', 'history-instance', 'create', 'search-type'];
const SYSTEM_INTERACTIONS = ['transaction', 'batch'];
const STARTED = new Date().toISOString();

/** `GET /{v}/metadata`: public, as FHIR clients fetch it before they authenticate. */
@ApiTags('FHIR')
@UseGuards(FhirRouteGuard)
@Controller()
export class CapabilityController {
  constructor(@Inject(SETTINGS) private readonly settings: Settings) {}

  @Get(':version/metadata')
  @ApiOperation({ summary: 'CapabilityStatement (Conformance in DSTU2) of what this server implements' })
  @ApiParam({ name: 'version', example: 'r4' })
  @ApiOkResponse({ description: 'CapabilityStatement' })
  @ApiNotFoundResponse({ description: 'unknown FHIR version' })
  metadata(@Param('version') version: string, @Req() req: Request, @Res() res: Response): void {
    sendReply(req, res, { status: 200, body: this.statement(versionParam(version)) });
  }

  private statement(version: FhirVersion): object {
    return buildCapabilityStatement({
      version,
      baseUrl: `${this.settings.urls.base}/${version}`,
      software: { name: 'fhir-data-service', version: '0.1.0' },
      resourceTypes: resourceTypes(version),
      typeInteractions: TYPE_INTERACTIONS,
      systemInteractions: SYSTEM_INTERACTIONS,
      searchParams: (type) => searchParamsOf(version, type),
      operations: operationsOf(version),
      date: STARTED,
    });
  }
}
