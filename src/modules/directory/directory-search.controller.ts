import { Body, Controller, Get, HttpCode, Post, Query } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiBody,
  ApiCreatedResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
} from '@nestjs/swagger';
import { API_BODY } from '../../common/body-validation';
import { UseTenant } from '../../tenancy/use-tenant.decorator';
import { DirectorySearchBodyDto, DirectorySearchResponseDto, ErrorBodyDto } from './directory.dto';
import { DirectoryService, SearchResult } from './directory.service';

const SEARCH_DESCRIPTION =
  'Every word of `query` must match the start of a word of the name, an address line or the city ' +
  '(case- and accent-insensitive; punctuation separates words and is never an operator). Active ' +
  'entries only, 20 per page, ordered by name then id.';

/** `{system_search_url}/api/search` (docs/api.md §11). Query parameters win over body fields on POST. */
@ApiTags('directory')
@Controller('api/search')
// POST only reads: a read-only (user/*.rs) or client-level token may search.
@UseTenant({ bearerOnly: true, readRoute: true })
@ApiBadRequestResponse({
  type: ErrorBodyDto,
  description: 'Bad system_type, negative/non-numeric offset, a repeated or non-string field',
})
export class DirectorySearchController {
  constructor(private readonly directory: DirectoryService) {}

  @Post()
  @HttpCode(201)
  @ApiOperation({ summary: 'Search providers, health systems and payers', description: SEARCH_DESCRIPTION })
  @ApiBody({ type: DirectorySearchBodyDto, required: false })
  @ApiCreatedResponse({ type: DirectorySearchResponseDto })
  async searchPost(
    @Query(API_BODY) query: DirectorySearchBodyDto,
    @Body(API_BODY) fields: DirectorySearchBodyDto,
  ): Promise<SearchResult> {
    return this.directory.search({
      query: query.query ?? fields.query,
      offset: query.offset ?? fields.offset,
      system_type: query.system_type ?? fields.system_type,
    });
  }

  @Get()
  @ApiOperation({
    summary: 'Search providers, health systems and payers (GET form)',
    description: SEARCH_DESCRIPTION,
  })
  @ApiOkResponse({ type: DirectorySearchResponseDto })
  async searchGet(@Query(API_BODY) query: DirectorySearchBodyDto): Promise<SearchResult> {
    return this.directory.search(query);
  }
}
