import { Controller, Get, Inject, Param } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import type { FhirVersion } from '@app/fhir';
import { SETTINGS } from '../../config/config.module';
import type { Settings } from '../../config/settings';
import { FhirRoute, FhirVersionParam } from '../../fhir-http';
import { smartConfiguration } from '../auth/oauth/smart-configuration';
import { CapabilityService } from './capability.service';

const VERSION = { name: 'version', example: 'r4' };

/**
 * `GET {base}/metadata` and `GET {base}/.well-known/smart-configuration` at every FHIR base: the
 * store (`/{v}`), the bulk data bases (`/bulk-data/{v}`, `/v1/{customer}/bulk-export/bulk-data/r4`),
 * which clients such as the SMART bulk-data-client read first. Public, as clients fetch them before
 * they authenticate.
 */
@ApiTags('FHIR')
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
  @FhirRoute({ tenant: false })
  metadata(@FhirVersionParam() version: FhirVersion) {
    return this.capabilities.statementJson(version, `${this.settings.urls.base}/${version}`);
  }

  @Get('bulk-data/:version/metadata')
  @ApiOperation({
    summary: 'CapabilityStatement of the bulk data base (the Bulk Data client reads it first)',
  })
  @ApiParam(VERSION)
  @ApiOkResponse({ description: 'CapabilityStatement' })
  @FhirRoute({ tenant: false, bases: ['bulk-data'] })
  bulkMetadata(@FhirVersionParam() version: FhirVersion) {
    return this.capabilities.statementJson(version, `${this.settings.urls.analytics}/bulk-data/${version}`);
  }

  @Get('v1/:customer/bulk-export/bulk-data/r4/metadata')
  @ApiOperation({ summary: 'CapabilityStatement of the population-level bulk data base (R4)' })
  @ApiParam({ name: 'customer', example: 'acme' })
  @ApiOkResponse({ description: 'CapabilityStatement' })
  @FhirRoute({ tenant: false, bases: ['gateway'] })
  gatewayMetadata(@Param('customer') customer: string) {
    const base = `${this.settings.urls.gateway}/v1/${encodeURIComponent(customer)}/bulk-export/bulk-data/r4`;
    return this.capabilities.statementJson('r4', base);
  }

  @Get([
    ':version/.well-known/smart-configuration',
    'bulk-data/:version/.well-known/smart-configuration',
    'v1/:customer/bulk-export/bulk-data/r4/.well-known/smart-configuration',
  ])
  @ApiOperation({ summary: 'SMART configuration relative to the FHIR base (SMART App Launch §2.1)' })
  @ApiOkResponse({ description: 'token_endpoint, grant types, auth methods, scopes …' })
  @FhirRoute({ tenant: false, bases: ['store', 'bulk-data', 'gateway'], mediaType: 'application/json' })
  smart() {
    return smartConfiguration(this.settings);
  }
}
