import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiParam, ApiQuery, ApiResponse, ApiTags } from '@nestjs/swagger';
import { FhirRoute } from '../../fhir-http';
import { DirectoryFhirService } from './directory-fhir.service';

/**
 * The directory as FHIR R4 (read-only): public directory data, for any bearer token. Its requests
 * take no client slot or admission lane (they read the directory's in-memory index).
 */
const DIRECTORY_ROUTE = { bases: ['directory'], tenant: { bearerOnly: true }, admitted: false } as const;

@ApiTags('directory')
@Controller('directory/r4')
export class DirectoryFhirController {
  constructor(private readonly fhir: DirectoryFhirService) {}

  @Get('Organization')
  @FhirRoute(DIRECTORY_ROUTE)
  @ApiOperation({
    summary: 'Directory as FHIR R4 Organizations (read-only searchset)',
    description:
      'Active and inactive entries are not filtered here except by search: only active entries match. ' +
      '`name` matches word prefixes of name, address line and city (like /api/search `query`).',
  })
  @ApiQuery({ name: 'name', required: false })
  @ApiQuery({ name: 'type', required: false, description: 'HealthSystem, Payer2Payer or PayerPatientAccess' })
  @ApiQuery({ name: '_count', required: false, description: 'Page size, at most 100 (default 10)' })
  @ApiQuery({ name: '_offset', required: false })
  @ApiQuery({ name: '_tag', required: false, description: 'Accepted for compatibility: directory' })
  @ApiOkResponse({ description: 'Bundle (searchset) of Organization' })
  @ApiResponse({ status: 400, description: 'Unknown parameter or bad value (OperationOutcome)' })
  async searchOrganizations(@Query() params: Record<string, unknown>) {
    return this.fhir.searchOrganizations(params);
  }

  @Get('Organization/:id')
  @FhirRoute(DIRECTORY_ROUTE)
  @ApiOperation({ summary: 'One directory entry as a FHIR R4 Organization' })
  @ApiParam({ name: 'id' })
  @ApiOkResponse({ description: 'Organization' })
  @ApiResponse({ status: 404, description: 'Not in the directory (OperationOutcome)' })
  async readOrganization(@Param('id') id: string) {
    return this.fhir.readOrganization(id);
  }

  @Get('Endpoint/:id')
  @FhirRoute(DIRECTORY_ROUTE)
  @ApiOperation({ summary: 'The FHIR endpoint of a directory entry (same id as its Organization)' })
  @ApiParam({ name: 'id' })
  @ApiOkResponse({ description: 'Endpoint (connectionType hl7-fhir-rest, address = fhir_base_url)' })
  @ApiResponse({ status: 404, description: 'No such entry, or it has no fhir_base_url (OperationOutcome)' })
  async readEndpoint(@Param('id') id: string) {
    return this.fhir.readEndpoint(id);
  }
}
