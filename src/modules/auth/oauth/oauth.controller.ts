import { Body, Controller, Get, Header, HttpCode, NotFoundException, Param, Post, Ip } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiBody,
  ApiConsumes,
  ApiOkResponse,
  ApiOperation,
  ApiParam,
  ApiTags,
  ApiTooManyRequestsResponse,
  ApiUnauthorizedResponse,
} from '@nestjs/swagger';
import { ClientCredentials } from '../clients/client-credentials';
import type { PresentedClientCredentials } from '../clients/client-credentials';
import { Realm, REALM_PROGRAMS } from '../tokens/grant.service';
import { OAuthService } from './oauth.service';
import { OAuthErrorView, TokenResponseView } from './token-response.dto';
import { OAUTH_FORM, TokenManagementBody, TokenRequestBody } from './token-request.dto';

const CONSUMES = ['application/x-www-form-urlencoded', 'application/json'];

/** docs/api.md §4: `/oauth2/token`. Backend use only (no CORS). */
@ApiTags('oauth')
@ApiTooManyRequestsResponse({ description: 'too many failed client authentications this hour (Retry-After)' })
@Controller()
export class OAuthController {
  constructor(private readonly oauth: OAuthService) {}

  @Post('oauth2/token')
  @HttpCode(200)
  @Header('Cache-Control', 'no-store')
  @Header('Pragma', 'no-cache')
  @ApiOperation({ summary: 'Exchange an authorization code or a refresh token for tokens (RFC 6749)' })
  @ApiConsumes(...CONSUMES)
  @ApiBody({ type: TokenRequestBody })
  @ApiOkResponse({ type: TokenResponseView })
  @ApiBadRequestResponse({
    type: OAuthErrorView,
    description: 'invalid_request, invalid_grant, unsupported_grant_type',
  })
  @ApiUnauthorizedResponse({ type: OAuthErrorView, description: 'invalid_client' })
  token(
    @Body(OAUTH_FORM) body: TokenRequestBody,
    @ClientCredentials() creds: PresentedClientCredentials | null,
    @Ip() address: string,
  ) {
    return this.oauth.token(body, creds, undefined, address);
  }
}

/**
 * RFC 7662 introspection and RFC 7009 revocation, for the plan's and the app's backends (a public
 * app revokes with its client_id alone). CORS: the registered redirect-URI origins (configure-app).
 */
@ApiTags('oauth')
@ApiTooManyRequestsResponse({ description: 'too many failed client authentications (Retry-After)' })
@Controller('oauth2')
export class TokenManagementController {
  constructor(private readonly oauth: OAuthService) {}

  @Post('introspect')
  @HttpCode(200)
  @Header('Cache-Control', 'no-store')
  @ApiOperation({
    summary: 'Token introspection (RFC 7662): { active, scope, client_id, sub, exp, patient }',
  })
  @ApiConsumes(...CONSUMES)
  @ApiBody({ type: TokenManagementBody })
  @ApiOkResponse({ description: '{ active: false } for a token the caller has no business with' })
  @ApiBadRequestResponse({ type: OAuthErrorView, description: 'invalid_request' })
  @ApiUnauthorizedResponse({ type: OAuthErrorView })
  introspect(
    @Body(OAUTH_FORM) body: TokenManagementBody,
    @ClientCredentials() creds: PresentedClientCredentials | null,
    @Ip() address: string,
  ) {
    return this.oauth.introspect(body, creds, address);
  }

  @Post('revoke')
  @HttpCode(200)
  @Header('Cache-Control', 'no-store')
  @ApiOperation({
    summary: "Token revocation (RFC 7009): the token's grant, its tokens and refresh tokens stop",
  })
  @ApiConsumes(...CONSUMES)
  @ApiBody({ type: TokenManagementBody })
  @ApiOkResponse({ description: '{} (also for unknown tokens, RFC 7009 §2.2)' })
  @ApiBadRequestResponse({ type: OAuthErrorView, description: 'invalid_request' })
  @ApiUnauthorizedResponse({ type: OAuthErrorView })
  revoke(
    @Body(OAUTH_FORM) body: TokenManagementBody,
    @ClientCredentials() creds: PresentedClientCredentials | null,
    @Ip() address: string,
  ) {
    return this.oauth.revoke(body, creds, address);
  }
}

/** docs/api.md §4: program realms. The dev-portal example is a GET with a form body: both are served. */
@ApiTags('oauth')
@ApiTooManyRequestsResponse({ description: 'too many failed client authentications this hour (Retry-After)' })
@Controller('auth/realms/:realm/protocol/openid-connect')
export class RealmTokenController {
  constructor(private readonly oauth: OAuthService) {}

  @Post('token')
  @HttpCode(200)
  @Header('Cache-Control', 'no-store')
  @Header('Pragma', 'no-cache')
  @ApiOperation({
    summary: 'Program token: client_credentials → client-level token (epa-uat, epa-prod, dev-portal)',
    description:
      'epa realms need the `epa` program; dev-portal needs `provider-access` or `p2p` and grants read-only scopes. ' +
      'authorization_code and refresh_token work as at /oauth2/token (Patient Access).',
  })
  @ApiParam({ name: 'realm', enum: Object.keys(REALM_PROGRAMS) })
  @ApiConsumes(...CONSUMES)
  @ApiBody({ type: TokenRequestBody })
  @ApiOkResponse({ type: TokenResponseView })
  @ApiBadRequestResponse({ type: OAuthErrorView })
  @ApiUnauthorizedResponse({ type: OAuthErrorView })
  post(
    @Param('realm') realm: string,
    @Body(OAUTH_FORM) body: TokenRequestBody,
    @ClientCredentials() creds: PresentedClientCredentials | null,
    @Ip() address: string,
  ) {
    return this.oauth.token(body, creds, knownRealm(realm), address);
  }

  @Get('token')
  @Header('Cache-Control', 'no-store')
  @Header('Pragma', 'no-cache')
  @ApiOperation({ summary: 'Program token, GET with a form body (as docs/api.md §4 shows for dev-portal)' })
  @ApiParam({ name: 'realm', enum: Object.keys(REALM_PROGRAMS) })
  @ApiOkResponse({ type: TokenResponseView })
  @ApiBadRequestResponse({ type: OAuthErrorView })
  @ApiUnauthorizedResponse({ type: OAuthErrorView })
  get(
    @Param('realm') realm: string,
    @Body(OAUTH_FORM) body: TokenRequestBody,
    @ClientCredentials() creds: PresentedClientCredentials | null,
    @Ip() address: string,
  ) {
    return this.oauth.token(body, creds, knownRealm(realm), address);
  }
}

function knownRealm(realm: string): Realm {
  if (!Object.hasOwn(REALM_PROGRAMS, realm)) throw new NotFoundException(`no realm "${realm}"`);
  return realm as Realm;
}

/** OpenID Connect Discovery 1.0, JWKS (RFC 7517), SMART configuration. */
@ApiTags('oauth')
@Controller('.well-known')
export class WellKnownController {
  constructor(private readonly oauth: OAuthService) {}

  @Get('openid-configuration')
  @ApiOperation({ summary: 'OpenID Connect discovery document' })
  @ApiOkResponse({ description: 'issuer, token_endpoint, jwks_uri, …' })
  openidConfiguration() {
    return this.oauth.openidConfiguration();
  }

  @Get('jwks.json')
  @ApiOperation({ summary: 'The public keys verifying access and id tokens (RS256)' })
  @ApiOkResponse({ description: '{ keys: [JWK] }' })
  jwks() {
    return this.oauth.jwks();
  }

  @Get('smart-configuration')
  @ApiOperation({ summary: 'SMART App Launch configuration' })
  @ApiOkResponse({ description: 'token_endpoint, scopes_supported, capabilities, …' })
  smartConfiguration() {
    return this.oauth.smartConfiguration();
  }
}
