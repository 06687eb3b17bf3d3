import { Body, Controller, Get, Headers, HttpCode, Ip, Post, Query, Res } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiBody,
  ApiConsumes,
  ApiOkResponse,
  ApiOperation,
  ApiQuery,
  ApiSecurity,
  ApiTags,
  ApiUnauthorizedResponse,
} from '@nestjs/swagger';
import type { Response } from 'express';
import { SECURITY } from '../../configure-app';
import { DirectoryEntry, SYSTEM_TYPES } from './directory-entry';
import { ClinicalListFormDto, DirectoryEntryDto, ErrorBodyDto } from './directory.dto';
import { ClinicalSystemsService, PresentedClientCredentials } from './clinical-systems.service';

type Fields = Record<string, unknown>;

const LIST_DESCRIPTION =
  '`systemType` is one of HealthSystem (default), Payer2Payer, PayerPatientAccess; anything else → 400. ' +
  'Active entries ordered by name, at most 500 (header X-Total-Count has the full count; narrow with `query`, ' +
  'which matches like /api/search).';

function credentialsFrom(address: string, headers: Fields, ...sources: Fields[]): PresentedClientCredentials {
  for (const source of [headers, ...sources]) {
    if (source?.client_id !== undefined || source?.client_secret !== undefined) {
      return { clientId: source.client_id, clientSecret: source.client_secret, address };
    }
  }
  return { address };
}

@ApiTags('directory')
@Controller('connect/system/clinical')
@ApiSecurity({ [SECURITY.clientId]: [], [SECURITY.clientSecret]: [] })
export class ClinicalSystemsController {
  constructor(private readonly clinical: ClinicalSystemsService) {}

  @Get()
  @ApiOperation({
    summary: 'List supported health systems (client credentials)',
    description: LIST_DESCRIPTION,
  })
  @ApiQuery({ name: 'systemType', required: false, enum: SYSTEM_TYPES })
  @ApiQuery({ name: 'query', required: false, description: 'Name filter' })
  @ApiQuery({ name: 'offset', required: false, description: 'Start of the list (≥ 0), as /api/search' })
  @ApiQuery({ name: 'client_id', required: false, description: 'Instead of the client_id header' })
  @ApiQuery({ name: 'client_secret', required: false, description: 'Instead of the client_secret header' })
  @ApiOkResponse({ type: [DirectoryEntryDto] })
  @ApiBadRequestResponse({ type: ErrorBodyDto, description: 'Unknown systemType' })
  @ApiUnauthorizedResponse({ type: ErrorBodyDto, description: 'Missing or bad client credentials' })
  async listGet(
    @Ip() address: string,
    @Headers() headers: Fields,
    @Query() query: Fields,
    @Res({ passthrough: true }) res: Response,
  ): Promise<DirectoryEntry[]> {
    const page = await this.clinical.list(
      credentialsFrom(address, headers, query),
      query.systemType,
      query.query,
      query.offset,
    );
    res.setHeader('X-Total-Count', String(page.total));
    return page.entries;
  }

  @Post()
  @HttpCode(200)
  @ApiOperation({
    summary: 'List supported health systems (form body credentials)',
    description: LIST_DESCRIPTION,
  })
  @ApiConsumes('application/x-www-form-urlencoded')
  @ApiBody({ type: ClinicalListFormDto })
  @ApiOkResponse({ type: [DirectoryEntryDto] })
  @ApiBadRequestResponse({ type: ErrorBodyDto, description: 'Unknown systemType' })
  @ApiUnauthorizedResponse({ type: ErrorBodyDto, description: 'Missing or bad client credentials' })
  async listPost(
    @Ip() address: string,
    @Headers() headers: Fields,
    @Query() query: Fields,
    @Body() body: unknown,
    @Res({ passthrough: true }) res: Response,
  ): Promise<DirectoryEntry[]> {
    const form = typeof body === 'object' && body !== null ? (body as Fields) : {};
    const page = await this.clinical.list(
      credentialsFrom(address, headers, form, query),
      form.systemType ?? query.systemType,
      form.query ?? query.query,
      form.offset ?? query.offset,
    );
    res.setHeader('X-Total-Count', String(page.total));
    return page.entries;
  }
}
