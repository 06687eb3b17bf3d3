import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsDefined, IsOptional, IsString, MaxLength } from 'class-validator';
import { bodyPipe } from '../../../common/body-validation';
import { OAuthError } from './oauth-error';

/** Longest credential parameter (codes, refresh tokens, access tokens, signed assertions). */
const MAX_CREDENTIAL = 8192;
/** Longest other parameter (grant types, client ids, scopes, URIs, PKCE verifiers). */
const MAX_PARAMETER = 2048;

/**
 * A token request's form or JSON body, checked by class-validator: a refusal is RFC 6749 §5.2
 * `400 { error: "invalid_request", error_description }` (with no-store), as every other token
 * endpoint error.
 */
export const OAUTH_FORM = bodyPipe((problem) => new OAuthError('invalid_request', problem));

/**
 * A request parameter (RFC 6749 §3.2): sent empty, it is a parameter not sent (§3.1); sent twice
 * (a form repeats it: an array) or as anything but a string, the request is malformed (§5.2).
 */
function Param(max: number, ...more: PropertyDecorator[]): PropertyDecorator {
  return applyDecorators(
    Transform(({ value }: { value: unknown }) => (value === '' ? undefined : value)),
    ...more,
    IsString({ message: '$property must be given once, as a string' }),
    MaxLength(max, { message: `$property is longer than ${max} characters` }),
  );
}

const Required = (max: number) => Param(max, IsDefined({ message: '$property is required' }));
const Optional = (max: number) => Param(max, IsOptional());

/**
 * How a client names and authenticates itself in the body (both token endpoints, introspection,
 * revocation): a secret (read with the client credentials, @ClientCredentials), a signed JWT
 * (RFC 7523: SMART Backend Services, private_key_jwt), or for a public SMART app its client_id alone.
 */
export class ClientAuthParams {
  @ApiPropertyOptional({ description: 'or HTTP Basic; alone for a public SMART app' })
  @Optional(MAX_PARAMETER)
  client_id?: string;

  @ApiPropertyOptional({ description: 'or `secret`, or HTTP Basic' })
  client_secret?: string;

  @ApiPropertyOptional({ example: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer' })
  @Optional(MAX_PARAMETER)
  client_assertion_type?: string;

  @ApiPropertyOptional({ description: 'the signed JWT (RFC 7523)', maxLength: MAX_CREDENTIAL })
  @Optional(MAX_CREDENTIAL)
  client_assertion?: string;
}

/**
 * `/oauth2/token` and the program realms' token endpoint (RFC 6749 §4.1.3, §6, §4.4). Which of
 * the grant's parameters it needs is checked once the client is authenticated (requiredParam), so
 * a client that fails authentication learns nothing else.
 */
export class TokenRequestBody extends ClientAuthParams {
  @ApiProperty({ enum: ['authorization_code', 'refresh_token', 'client_credentials'] })
  @Required(MAX_PARAMETER)
  grant_type!: string;

  @ApiPropertyOptional({ description: 'grant_type=authorization_code', maxLength: MAX_CREDENTIAL })
  @Optional(MAX_CREDENTIAL)
  code?: string;

  @ApiPropertyOptional({ description: 'authorization_code of a SMART app: as in the authorize request' })
  @Optional(MAX_PARAMETER)
  redirect_uri?: string;

  @ApiPropertyOptional({ description: 'authorization_code of a PKCE-bound code (RFC 7636)' })
  @Optional(MAX_PARAMETER)
  code_verifier?: string;

  @ApiPropertyOptional({ description: 'grant_type=refresh_token', maxLength: MAX_CREDENTIAL })
  @Optional(MAX_CREDENTIAL)
  refresh_token?: string;

  @ApiPropertyOptional({
    description: 'client_credentials: e.g. `bulk-data user/*.rs`; refresh: a narrower one',
  })
  @Optional(MAX_PARAMETER)
  scope?: string;
}

/** RFC 7662 introspection and RFC 7009 revocation. */
export class TokenManagementBody extends ClientAuthParams {
  @ApiProperty({ description: 'an access or refresh token', maxLength: MAX_CREDENTIAL })
  @Required(MAX_CREDENTIAL)
  token!: string;

  @ApiPropertyOptional({ description: 'access_token or refresh_token: a hint only (RFC 7009 §2.1)' })
  @Optional(MAX_PARAMETER)
  token_type_hint?: string;
}

/** A parameter the grant needs, checked after client authentication: invalid_request when missing. */
export function requiredParam(value: string | undefined, name: string): string {
  if (value === undefined) throw new OAuthError('invalid_request', `${name} is required`);
  return value;
}
