import { Body, Controller, Get, HttpCode, Post, Put, Query, UseGuards } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiBody,
  ApiConflictResponse,
  ApiConsumes,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiSecurity,
  ApiTags,
  ApiTooManyRequestsResponse,
  ApiUnauthorizedResponse,
} from '@nestjs/swagger';
import { API_BODY } from '../../common/body-validation';
import { SECURITY } from '../../tenancy/security-schemes';
import { Tenant, UseTenant } from '../../tenancy/use-tenant.decorator';
import type { TenantContext } from '../../tenancy/tenant-context';
import { ManagingClientGuard, ManagingClientOf } from './managing-client.guard';
import {
  AuthCodeBody,
  AuthCodeView,
  CreatedUserView,
  CreateUserBody,
  ListUsersQuery,
  RenameUserBody,
  SignInSecretBody,
  UserListView,
  UserView,
} from './user.dto';
import { UsersService, type ManagingClient } from './users.service';

const CONSUMES = ['application/json', 'application/x-www-form-urlencoded'];

/** docs/api.md §3: user management. Backend use only (no CORS). */
@ApiTags('user-management')
@ApiTooManyRequestsResponse({ description: 'over USER_MGMT_RATE_LIMIT calls this hour (Retry-After)' })
@Controller('user-management/v1/user')
export class UsersController {
  constructor(private readonly users: UsersService) {}

  @Post()
  @HttpCode(200)
  @UseGuards(ManagingClientGuard)
  @ApiOperation({
    summary: 'Create a user (or return the existing one with "this user already exists")',
    description:
      'Returns a new numeric service_user_id, an access and a refresh token, and an authorization code.',
  })
  @ApiConsumes(...CONSUMES)
  @ApiBody({ type: CreateUserBody })
  @ApiSecurity({ [SECURITY.clientId]: [], [SECURITY.clientSecret]: [] })
  @ApiOkResponse({ type: CreatedUserView })
  @ApiBadRequestResponse({ description: 'app_user_id missing, blank, too long or with control characters' })
  @ApiUnauthorizedResponse({ description: 'bad client credentials' })
  create(@ManagingClientOf() client: ManagingClient, @Body(API_BODY) body: CreateUserBody) {
    return this.users.createUser(client, body.app_user_id);
  }

  @Get()
  @UseTenant({ userHeaderOptional: true })
  @ApiOperation({
    summary: "List the client's users",
    description:
      'Client headers (or a client-level token) list every user of the client; a user token lists only its own user.',
  })
  @ApiOkResponse({ type: UserListView })
  @ApiBadRequestResponse({ description: 'a bad filter, limit or offset' })
  list(@Tenant() ctx: TenantContext, @Query(API_BODY) q: ListUsersQuery) {
    return this.users.listUsers(ctx, q);
  }

  @Put()
  @UseGuards(ManagingClientGuard)
  @ApiOperation({ summary: 'Rename a user (only app_user_id changes)' })
  @ApiConsumes(...CONSUMES)
  @ApiBody({ type: RenameUserBody })
  @ApiSecurity({ [SECURITY.clientId]: [], [SECURITY.clientSecret]: [] })
  @ApiOkResponse({ type: UserView })
  @ApiBadRequestResponse({ description: 'a bad app_user_id or service_user_id' })
  @ApiNotFoundResponse({ description: 'no such user in this client' })
  @ApiConflictResponse({ description: 'the new app_user_id is taken in this client' })
  @ApiUnauthorizedResponse({ description: 'bad client credentials' })
  rename(@ManagingClientOf() client: ManagingClient, @Body(API_BODY) body: RenameUserBody) {
    return this.users.renameUser(client, body.service_user_id, body.app_user_id);
  }

  @Put('sign-in-secret')
  @UseGuards(ManagingClientGuard)
  @ApiOperation({
    summary: "Set a member's sign-in secret (SMART App Launch built-in sign-in; backend use only)",
    description:
      'The plan sets the secret its member types on the sign-in page; without `secret` a random one is made and returned once.',
  })
  @ApiConsumes(...CONSUMES)
  @ApiBody({ type: SignInSecretBody })
  @ApiSecurity({ [SECURITY.clientId]: [], [SECURITY.clientSecret]: [] })
  @ApiOkResponse({ description: '{ service_user_id, app_user_id[, sign_in_secret] }' })
  @ApiBadRequestResponse({ description: 'a bad app_user_id, or a secret not of 8 to 200 characters' })
  @ApiNotFoundResponse({ description: 'no such user in this client' })
  @ApiUnauthorizedResponse({ description: 'bad client credentials' })
  signInSecret(@ManagingClientOf() client: ManagingClient, @Body(API_BODY) body: SignInSecretBody) {
    return this.users.setSignInSecret(client, body.app_user_id, body.secret);
  }

  @Post('auth-code')
  @HttpCode(200)
  @UseGuards(ManagingClientGuard)
  @ApiOperation({ summary: 'Issue an authorization code for a user (backend use only)' })
  @ApiConsumes(...CONSUMES)
  @ApiBody({ type: AuthCodeBody })
  @ApiSecurity({ [SECURITY.clientId]: [], [SECURITY.clientSecret]: [] })
  @ApiOkResponse({ type: AuthCodeView })
  @ApiBadRequestResponse({ description: 'a bad app_user_id or scope' })
  @ApiNotFoundResponse({ description: 'no such user in this client' })
  @ApiUnauthorizedResponse({ description: 'bad client credentials' })
  authCode(@ManagingClientOf() client: ManagingClient, @Body(API_BODY) body: AuthCodeBody) {
    return this.users.issueAuthCode(client, body.app_user_id, body.scope);
  }
}
