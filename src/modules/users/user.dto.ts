import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Expose, Transform } from 'class-transformer';
import {
  IsInt,
  IsOptional,
  IsString,
  Length,
  Matches,
  Max,
  MaxLength,
  Min,
  ValidateBy,
} from 'class-validator';
import { identifierProblem } from '../../common/body-hygiene';

/** Shortest member sign-in secret a plan may set (NIST SP 800-63B §5.1.1.2: at least 8). */
const MIN_SIGN_IN_SECRET = 8;
const MAX_SIGN_IN_SECRET = 200;
const MAX_APP_USER_ID = 256;

/**
 * An app_user_id (body or query): a string (a JSON number is taken as its digits), not blank, at
 * most 256 characters, and — it also travels in the x-app-user-id header — without any control
 * character (a header cannot carry CR/LF, and a log line should not) or lone surrogate.
 */
function AppUserIdRule(): PropertyDecorator {
  return applyDecorators(
    Transform(({ value }: { value: unknown }) => (typeof value === 'number' ? String(value) : value)),
    IsString({ message: '$property is required' }),
    Matches(/\S/, { message: '$property is required' }),
    MaxLength(MAX_APP_USER_ID, { message: `$property is longer than ${MAX_APP_USER_ID} characters` }),
    ValidateBy({
      name: 'isIdentifier',
      validator: {
        validate: (value: unknown) => typeof value === 'string' && !identifierProblem(value),
        defaultMessage: (args) => `${args?.property} ${identifierProblem(String(args?.value))}`,
      },
    }),
  );
}

/** A service_user_id: a positive safe integer, as a JSON number or decimal digits. */
function ServiceUserIdRule(): PropertyDecorator {
  const message = '$property must be a positive integer';
  return applyDecorators(
    Transform(({ value }: { value: unknown }) =>
      typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value,
    ),
    IsInt({ message }),
    Min(1, { message }),
    Max(Number.MAX_SAFE_INTEGER, { message }),
  );
}

/** Absent, or a string meeting `more` (a composite's rules are checked in the order written). */
function OptionalStringRule(...more: PropertyDecorator[]): PropertyDecorator {
  return applyDecorators(IsOptional(), IsString({ message: '$property must be a string' }), ...more);
}

/** A query parameter given empty (`?service_user_id=`) is a parameter not given. */
const EmptyAsAbsent = () => Transform(({ value }: { value: unknown }) => (value === '' ? undefined : value));

/** The user-management bodies (docs/api.md §3); client credentials are read by @ClientCredentials. */
export class CreateUserBody {
  @ApiProperty({ example: 'alice@example.org', maxLength: MAX_APP_USER_ID })
  @AppUserIdRule()
  app_user_id!: string;
  @ApiPropertyOptional({ description: 'or header client_id / HTTP Basic' })
  client_id?: string;
  @ApiPropertyOptional({ description: 'or header client_secret / HTTP Basic' })
  client_secret?: string;
}

export class RenameUserBody {
  @ApiProperty({
    description: 'the new name (the reference also calls it app_id_user)',
    maxLength: MAX_APP_USER_ID,
  })
  @Expose()
  // above the rule: class-transformer applies transforms in the order written, so the alias is
  // taken first and then read as any app_user_id
  @Transform(({ value, obj }: { value: unknown; obj: Record<string, unknown> }) => value ?? obj.app_id_user)
  @AppUserIdRule()
  app_user_id!: string;
  @ApiPropertyOptional({ description: 'alias of app_user_id' })
  app_id_user?: string;
  @ApiProperty({ description: 'the user to rename; cannot itself be changed', example: 1001 })
  @Expose()
  @ServiceUserIdRule()
  service_user_id!: number;
}

export class SignInSecretBody extends CreateUserBody {
  @ApiPropertyOptional({
    description: 'omitted: a random one is made and returned once',
    minLength: MIN_SIGN_IN_SECRET,
    maxLength: MAX_SIGN_IN_SECRET,
  })
  @OptionalStringRule(
    Length(MIN_SIGN_IN_SECRET, MAX_SIGN_IN_SECRET, {
      message: `$property must be ${MIN_SIGN_IN_SECRET} to ${MAX_SIGN_IN_SECRET} characters`,
    }),
  )
  secret?: string;
}

export class AuthCodeBody extends CreateUserBody {
  @ApiPropertyOptional({
    description: 'space-separated; `openid` adds an id_token to the exchange',
    example: 'openid',
  })
  @OptionalStringRule()
  scope?: string;
}

/** GET /user-management/v1/user filters; `limit` and `offset` are read as on every route (pagingParameter). */
export class ListUsersQuery {
  @ApiPropertyOptional()
  @IsOptional()
  @AppUserIdRule()
  app_user_id?: string;
  @ApiPropertyOptional()
  @EmptyAsAbsent()
  @IsOptional()
  @ServiceUserIdRule()
  service_user_id?: number;
  @ApiPropertyOptional({ type: String, description: '1–500, default 50' })
  @IsOptional()
  limit?: unknown;
  @ApiPropertyOptional({ type: String, description: 'default 0' })
  @IsOptional()
  offset?: unknown;
}

export class UserView {
  @ApiProperty() service_user_id!: number;
  @ApiProperty() app_user_id!: string;
  @ApiProperty() active!: boolean;
  @ApiProperty() created!: Date;
}

export class CreatedUserView {
  @ApiProperty() service_user_id!: number;
  @ApiProperty() app_user_id!: string;
  @ApiProperty() active!: boolean;
  @ApiPropertyOptional({ description: 'absent when the user already existed' }) access_token?: string;
  @ApiPropertyOptional() refresh_token?: string;
  @ApiPropertyOptional({ description: 'an authorization code for the token endpoint' }) code?: string;
  @ApiPropertyOptional({ example: 'this user already exists' }) message?: string;
}

export class UserListView {
  @ApiProperty({ type: [UserView] }) users!: UserView[];
  @ApiProperty() total!: number;
  @ApiProperty() limit!: number;
  @ApiProperty() offset!: number;
}

export class AuthCodeView {
  @ApiProperty() code!: string;
  @ApiProperty({ example: 7200 }) expires_in!: number;
  @ApiProperty({ example: 'user/*.*' }) scope!: string;
}
