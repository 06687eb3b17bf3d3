import { Injectable } from '@nestjs/common';
import type { AccessTokenClaims, IdentityLookup, TenantClient } from '../../tenancy/identity-lookup';
import { UsersService } from '../users/users.service';
import { ClientsService } from './clients/clients.service';
import { ClientAuthenticator } from './rate-limit/client-authenticator';
import { GrantService } from './tokens/grant.service';
import { TokenService } from './tokens/token.service';
import { LaunchTokensService } from './member-launch/launch-tokens.service';

/** The identity side of the tenant guard: clients, tokens and users as tenancy sees them. */
@Injectable()
export class AuthIdentityLookup implements IdentityLookup {
  constructor(
    private readonly clients: ClientsService,
    private readonly clientAuth: ClientAuthenticator,
    private readonly tokens: TokenService,
    private readonly grants: GrantService,
    private readonly users: UsersService,
    private readonly launchTokens: LaunchTokensService,
  ) {}

  isLaunchGrantActive(launch: { readonly app: string; readonly grant: string }): Promise<boolean> {
    return this.launchTokens.isGrantActive(launch);
  }

  verifyAccessToken(token: string): AccessTokenClaims | null {
    return this.tokens.verifyAccessToken(token);
  }

  cachedAccessToken(token: string): AccessTokenClaims | null | undefined {
    return this.tokens.cachedAccessToken(token);
  }

  cachedActiveClient(clientId: string): TenantClient | null | undefined {
    return this.clients.cachedActive(clientId);
  }

  cachedFamilyRevoked(clientId: string, family: string): boolean | undefined {
    return this.grants.cachedFamilyRevoked(clientId, family);
  }

  cachedLaunchGrantActive(launch: { readonly app: string; readonly grant: string }): boolean | undefined {
    return this.launchTokens.cachedGrantActive(launch);
  }

  findActiveClient(clientId: string): Promise<TenantClient | null> {
    return this.clients.findActive(clientId);
  }

  authenticateClient(clientId: string, secret: string, sourceAddress: string): Promise<TenantClient | null> {
    return this.clientAuth.authenticate(clientId, secret, sourceAddress);
  }

  isFamilyRevoked(clientId: string, family: string): Promise<boolean> {
    return this.grants.isFamilyRevoked(clientId, family);
  }

  async findUserId(clientId: string, serviceUserId: number): Promise<number | null> {
    return (await this.users.findUser(clientId, serviceUserId))?.service_user_id ?? null;
  }

  async findUserIdByAppUserId(clientId: string, appUserId: string): Promise<number | null> {
    return (await this.users.findUserByAppUserId(clientId, appUserId))?.service_user_id ?? null;
  }
}
