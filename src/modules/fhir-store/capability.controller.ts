import { Controller, Get, Inject, Param, Req, Res, UseGuards } from '@nestjs/common';
import { ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { SETTINGS } from '../../config/config.module';
import type { Settings } from '../../config/settings';
import { smartConfiguration } from '../auth/oauth/smart-configuration';
import { CapabilityService } from './capability.service';
import { sendReply, versionParam } from './fhir-reply';
import { FhirRouteGuard } from './fhir-route.guard';

const VERSION = { name: 'version', example: 'r4' };

/**
 * `GET {base}/metadata` and `GET {base}/.well-known/smart-configuration` at every FHIR base: the
 * store (`/{v}`), the bulk data bases (`/bulk-data/{v}`, `/v1/{customer}/bulk-export/bulk-data/r4`),
 * which clients such as the SMART bulk-data-client read first. Public, as clients fetch them before
 * they authenticate.
 */
@ApiTags('FHIR')
@UseGuards(FhirRouteGuard)
@Controller()
export class CapabilityController {
  constructor(
    private readonly capabilities: CapabilityService,
    @Inject(SETTINGS) private readonly settings: Settings,
  ) {}

  @Get(':version/metadata')
  @ApiOperation({ summary: 'CapabilityStatement (Conformance in DSTU2) of what this server implements' })
  @ApiParam(VERSION)
  @ApiOkResponse({ description: 'CapabilityStatement' })
  @ApiNotFoundResponse({ description: 'unknown FHIR version' })
  metadata(@Param('version') version: string, @Req() req: Request, @Res() res: Response): void {
    const v = versionParam(version);
    this.send(req, res, v, `${this.settings.urls.base}/${v}`);
  }

  @Get('bulk-data/:version/metadata')
  @ApiOperation({
    summary: 'CapabilityStatement of the bulk data base (the Bulk Data client reads it first)',
  })
  @ApiParam(VERSION)
  @ApiOkResponse({ description: 'CapabilityStatement' })
  bulkMetadata(@Param('version') version: string, @Req() req: Request, @Res() res: Response): void {
    const v = versionParam(version);
    this.send(req, res, v, `${this.settings.urls.analytics}/bulk-data/${v}`);
  }

  @Get('v1/:customer/bulk-export/bulk-data/r4/metadata')
  @ApiOperation({ summary: 'CapabilityStatement of the population-level bulk data base (R4)' })
  @ApiParam({ name: 'customer', example: 'acme' })
  @ApiOkResponse({ description: 'CapabilityStatement' })
  gatewayMetadata(@Param('customer') customer: string, @Req() req: Request, @Res() res: Response): void {
    const base = `${this.settings.urls.gateway}/v1/${encodeURIComponent(customer)}/bulk-export/bulk-data/r4`;
    this.send(req, res, 'r4', base);
  }

  @Get([
    ':version/.well-known/smart-configuration',
    'bulk-data/:version/.well-known/smart-configuration',
    'v1/:customer/bulk-export/bulk-data/r4/.well-known/smart-configuration',
  ])
  @ApiOperation({ summary: 'SMART configuration relative to the FHIR base (SMART App Launch §2.1)' })
  @ApiOkResponse({ description: 'token_endpoint, grant types, auth methods, scopes …' })
  smart(@Res() res: Response): void {
    res
      .status(200)
      .type('application/json')
      .send(JSON.stringify(smartConfiguration(this.settings)));
  }

  private send(req: Request, res: Response, version: 'r4' | 'stu3' | 'dstu2', baseUrl: string): void {
    sendReply(req, res, { status: 200, body: this.capabilities.statementJson(version, baseUrl) });
  }
}
