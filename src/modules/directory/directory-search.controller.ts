import { Body, Controller, Get, HttpCode, Post, Query } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiBody,
  ApiCreatedResponse,
  ApiOkResponse,
  ApiOperation,
  ApiQuery,
  ApiTags,
} from '@nestjs/swagger';
import { UseTenant } from '../../tenancy/use-tenant.decorator';
import { SYSTEM_TYPES } from './directory-entry';
import { DirectorySearchBodyDto, DirectorySearchResponseDto, ErrorBodyDto } from './directory.dto';
import { DirectoryService, SearchInput, SearchResult } from './directory.service';

const SEARCH_DESCRIPTION =
  'Every word of `query` must match the start of a word of the name, an address line or the city ' +
  '(case- and accent-insensitive; punctuation separates words and is never an operator). Active ' +
  'entries only, 20 per page, ordered by name then id.';

function searchQueries(): MethodDecorator {
  return (target, key, descriptor) => {
    ApiQuery({ name: 'query', required: false })(target, key, descriptor);
    ApiQuery({ name: 'offset', required: false, description: 'Start of the result set (≥ 0)' })(
      target,
      key,
      descriptor,
    );
    ApiQuery({ name: 'system_type', required: false, enum: SYSTEM_TYPES })(target, key, descriptor);
    ApiBadRequestResponse({
      type: ErrorBodyDto,
      description: 'Bad system_type, or negative/non-numeric offset',
    })(target, key, descriptor);
  };
}

/** `{system_search_url}/api/search` (docs/api.md §11). Query parameters win over body fields on POST. */
@ApiTags('directory')
@Controller('api/search')
// POST only reads: a read-only (user/*.rs) or client-level token may search.
@UseTenant({ bearerOnly: true, readRoute: true })
export class DirectorySearchController {
  constructor(private readonly directory: DirectoryService) {}

  @Post()
  @HttpCode(201)
  @ApiOperation({ summary: 'Search providers, health systems and payers', description: SEARCH_DESCRIPTION })
  @searchQueries()
  @ApiBody({ type: DirectorySearchBodyDto, required: false })
  @ApiCreatedResponse({ type: DirectorySearchResponseDto })
  async searchPost(@Query() query: SearchInput, @Body() body: unknown): Promise<SearchResult> {
    const fields = typeof body === 'object' && body !== null ? (body as SearchInput) : {};
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
  @searchQueries()
  @ApiOkResponse({ type: DirectorySearchResponseDto })
  async searchGet(@Query() query: SearchInput): Promise<SearchResult> {
    return this.directory.search(query);
  }
}
