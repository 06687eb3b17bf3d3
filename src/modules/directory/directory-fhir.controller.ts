import {
  ArgumentsHost,
  Catch,
  Controller,
  ExceptionFilter,
  Get,
  Header,
  Param,
  Query,
  UseFilters,
} from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiParam, ApiQuery, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { issue, operationOutcome, OperationOutcomeError } from '@app/fhir';
import { UseTenant } from '../../tenancy';
import { mapError } from '../../common/error-mapping';
import { FHIR_JSON } from '../../common/fhir-routes';
import { DirectoryFhirService } from './directory-fhir.service';

/**
 * `/directory/r4` is outside the paths the global filter treats as FHIR, so this controller's
 * errors are turned into OperationOutcomes here, with the same status mapping as everywhere.
 */
@Catch()
export class DirectoryFhirExceptionFilter implements ExceptionFilter {
  catch(exception: unknown, host: ArgumentsHost): void {
    const res = host.switchToHttp().getResponse<Response>();
    const mapped = mapError(exception);
    const outcome =
      exception instanceof OperationOutcomeError
        ? exception.outcome
        : operationOutcome([issue(mapped.code, mapped.message)]);
    for (const [k, v] of Object.entries(mapped.headers)) res.setHeader(k, v);
    res.status(mapped.status).setHeader('Content-Type', `${FHIR_JSON}; charset=utf-8`);
    res.send(JSON.stringify(outcome));
  }
}

@ApiTags('directory')
@Controller('directory/r4')
@UseTenant({ bearerOnly: true })
@UseFilters(DirectoryFhirExceptionFilter)
export class DirectoryFhirController {
  constructor(private readonly fhir: DirectoryFhirService) {}

  @Get('Organization')
  @Header('Content-Type', `${FHIR_JSON}; charset=utf-8`)
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
  @Header('Content-Type', `${FHIR_JSON}; charset=utf-8`)
  @ApiOperation({ summary: 'One directory entry as a FHIR R4 Organization' })
  @ApiParam({ name: 'id' })
  @ApiOkResponse({ description: 'Organization' })
  @ApiResponse({ status: 404, description: 'Not in the directory (OperationOutcome)' })
  async readOrganization(@Param('id') id: string) {
    return this.fhir.readOrganization(id);
  }

  @Get('Endpoint/:id')
  @Header('Content-Type', `${FHIR_JSON}; charset=utf-8`)
  @ApiOperation({ summary: 'The FHIR endpoint of a directory entry (same id as its Organization)' })
  @ApiParam({ name: 'id' })
  @ApiOkResponse({ description: 'Endpoint (connectionType hl7-fhir-rest, address = fhir_base_url)' })
  @ApiResponse({ status: 404, description: 'No such entry, or it has no fhir_base_url (OperationOutcome)' })
  async readEndpoint(@Param('id') id: string) {
    return this.fhir.readEndpoint(id);
  }
}
