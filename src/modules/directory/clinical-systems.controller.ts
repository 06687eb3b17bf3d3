import { Body, Controller, Get, HttpCode, Post, Query, Res, UseGuards } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiBody,
  ApiConsumes,
  ApiOkResponse,
  ApiOperation,
  ApiSecurity,
  ApiTags,
  ApiUnauthorizedResponse,
} from '@nestjs/swagger';
import type { Response } from 'express';
import { API_BODY } from '../../common/body-validation';
import { SECURITY } from '../../tenancy/security-schemes';
import { ClinicalClientGuard } from './clinical-client.guard';
import { DirectoryEntry } from './directory-entry';
import { ClinicalListInputDto, DirectoryEntryDto, ErrorBodyDto } from './directory.dto';
import { DirectoryService } from './directory.service';

const LIST_DESCRIPTION =
  '`systemType` is one of HealthSystem (default), Payer2Payer, PayerPatientAccess; anything else → 400. ' +
  'Active entries ordered by name, at most 500 (header X-Total-Count has the full count; narrow with `query`, ' +
  'which matches like /api/search).';

/** `{base_url}/connect/system/clinical` (docs/api.md §11): the supported systems, for a client. */
@ApiTags('directory')
@Controller('connect/system/clinical')
@UseGuards(ClinicalClientGuard)
@ApiSecurity({ [SECURITY.clientId]: [], [SECURITY.clientSecret]: [] })
@ApiBadRequestResponse({
  type: ErrorBodyDto,
  description: 'Unknown systemType, a repeated field, a bad offset',
})
@ApiUnauthorizedResponse({ type: ErrorBodyDto, description: 'Missing or bad client credentials' })
export class ClinicalSystemsController {
  constructor(private readonly directory: DirectoryService) {}

  @Get()
  @ApiOperation({
    summary: 'List supported health systems (client credentials)',
    description: LIST_DESCRIPTION,
  })
  @ApiOkResponse({ type: [DirectoryEntryDto] })
  async listGet(
    @Query(API_BODY) query: ClinicalListInputDto,
    @Res({ passthrough: true }) res: Response,
  ): Promise<DirectoryEntry[]> {
    return this.list(query, res);
  }

  @Post()
  @HttpCode(200)
  @ApiOperation({
    summary: 'List supported health systems (form body credentials)',
    description: LIST_DESCRIPTION,
  })
  @ApiConsumes('application/x-www-form-urlencoded')
  @ApiBody({ type: ClinicalListInputDto })
  @ApiOkResponse({ type: [DirectoryEntryDto] })
  async listPost(
    @Query(API_BODY) query: ClinicalListInputDto,
    @Body(API_BODY) form: ClinicalListInputDto,
    @Res({ passthrough: true }) res: Response,
  ): Promise<DirectoryEntry[]> {
    return this.list(
      {
        systemType: form.systemType ?? query.systemType,
        query: form.query ?? query.query,
        offset: form.offset ?? query.offset,
      },
      res,
    );
  }

  private async list(input: ClinicalListInputDto, res: Response): Promise<DirectoryEntry[]> {
    const page = await this.directory.clinicalList(input.systemType, input.query, input.offset);
    res.setHeader('X-Total-Count', String(page.total));
    return page.entries;
  }
}
