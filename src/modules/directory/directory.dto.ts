import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsIn, IsOptional, IsString } from 'class-validator';
import { ENTRY_STATUSES, SYSTEM_TYPES } from './directory-entry';
import type { DirectoryAddress, DirectoryEntry, EntryStatus, SystemType } from './directory-entry';

/** Swagger shapes of the directory (docs/api.md §11), and the rules of its inputs (class-validator). */
export class DirectoryAddressDto implements DirectoryAddress {
  @ApiProperty({ type: [String], example: ['60 HOSPITAL ROAD'] })
  line!: string[];
  @ApiProperty({ type: String, nullable: true, example: 'LEOMINSTER' })
  city!: string | null;
  @ApiProperty({ type: String, nullable: true, example: 'MA' })
  state!: string | null;
  @ApiProperty({ type: String, nullable: true, example: '01453' })
  postalCode!: string | null;
}

export class DirectoryEntryDto implements DirectoryEntry {
  @ApiProperty({ description: 'Stable id (the import key)', example: 'ef58ea08-d883-3957-8300-150554edc8fb' })
  id!: string;
  @ApiProperty({ example: 'HEALTHALLIANCE HOSPITALS, INC' })
  name!: string;
  @ApiProperty({ enum: SYSTEM_TYPES })
  system_type!: SystemType;
  @ApiProperty({ type: DirectoryAddressDto })
  address!: DirectoryAddressDto;
  @ApiProperty({ type: String, nullable: true, description: 'EHR or platform vendor name', example: 'Epic' })
  ehr!: string | null;
  @ApiProperty({
    type: String,
    nullable: true,
    description: 'FHIR R4 base URL to connect to',
    example: 'https://fhir.example.org/r4',
  })
  fhir_base_url!: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'Logo image URL' })
  logo!: string | null;
  @ApiProperty({ enum: ENTRY_STATUSES, description: 'Searches return active entries only' })
  status!: EntryStatus;
  @ApiProperty({ format: 'date-time' })
  created_at!: string;
  @ApiProperty({ format: 'date-time' })
  updated_at!: string;
}

export class DirectorySearchResponseDto {
  @ApiProperty({ description: 'Number of matching entries (all pages)', example: 42 })
  total!: number;
  @ApiProperty({ description: 'Start of this page in the result set', example: 0 })
  offset!: number;
  @ApiProperty({ type: [DirectoryEntryDto], description: 'At most 20 entries, ordered by name then id' })
  results!: DirectoryEntryDto[];
}

/** One value, a string (a repeated query parameter or a JSON object is not: no operator reaches a filter). */
const SINGLE_STRING = { message: '$property must be a single string' };

/** A system type, by its exact name (`system_type` on search, `systemType` on the clinical list); empty: none. */
function SystemTypeRule(): PropertyDecorator {
  return applyDecorators(
    Transform(({ value }: { value: unknown }) => (value === '' ? undefined : value)),
    IsOptional(),
    IsString(SINGLE_STRING),
    IsIn(SYSTEM_TYPES, { message: `$property must be one of ${SYSTEM_TYPES.join(', ')} (got "$value")` }),
  );
}

/** Search words (null: none). */
function SearchWordsRule(): PropertyDecorator {
  return applyDecorators(IsOptional(), IsString(SINGLE_STRING));
}

/** `offset` is read as on every route (pagingParameter), so the DTO only keeps it. */
const OffsetField = () => IsOptional();

/** `/api/search` inputs: the query string, and on POST the body (query parameters win). */
export class DirectorySearchBodyDto {
  @ApiPropertyOptional({ description: 'Words; each must start a word of name, address.line or address.city' })
  @SearchWordsRule()
  query?: string;
  @ApiPropertyOptional({
    type: String,
    description: 'Start of the result set (non-negative integer)',
    example: '0',
  })
  @OffsetField()
  offset?: unknown;
  @ApiPropertyOptional({ enum: SYSTEM_TYPES })
  @SystemTypeRule()
  system_type?: SystemType;
}

/** `/connect/system/clinical` inputs: the query string, and on POST the form (form fields win). */
export class ClinicalListInputDto {
  @ApiPropertyOptional({ enum: SYSTEM_TYPES, default: 'HealthSystem' })
  @SystemTypeRule()
  systemType?: SystemType;
  @ApiPropertyOptional({ description: 'Name filter (same word-prefix matching as /api/search)' })
  @SearchWordsRule()
  query?: string;
  @ApiPropertyOptional({ type: String, description: 'Start of the list (≥ 0), as /api/search' })
  @OffsetField()
  offset?: unknown;
  @ApiPropertyOptional({ description: 'Instead of the client_id header (read by ClinicalClientGuard)' })
  client_id?: string;
  @ApiPropertyOptional({ description: 'Instead of the client_secret header (read by ClinicalClientGuard)' })
  client_secret?: string;
}

export class ErrorBodyDto {
  @ApiProperty({ example: 'bad_request' })
  error!: string;
  @ApiProperty({ example: 'offset must be a non-negative integer (got "-1")' })
  message!: string;
}
