import { ConflictException, HttpException, Injectable, NotFoundException } from '@nestjs/common';
import { pagingParameter } from '../../common/paging-parameter';
import { ClientScope, TenantContext } from '../../tenancy/tenant-context';
import { ClientRecord } from '../auth/clients/client.schema';
import { PresentedClientCredentials } from '../auth/clients/client-credentials';
import { ClientAuthenticator } from '../auth/rate-limit/client-authenticator';
import { RateLimitService } from '../auth/rate-limit/rate-limit.service';
import { GrantService } from '../auth/tokens/grant.service';
import { hashChosenSecret, newSecret } from '../auth/clients/secret-hash';
import type { ListUsersQuery } from './user.dto';
import { UserRecord } from './user.schema';
import { UsersRepository } from './users.repository';
import { isDuplicateKey } from '../../storage/duplicate-key';

export const USER_EXISTS_MESSAGE = 'this user already exists';
const MAX_PAGE = 500;

export interface CreatedUser {
  service_user_id: number;
  app_user_id: string;
  active: boolean;
  access_token?: string;
  refresh_token?: string;
  code?: string;
  message?: string;
}

export interface UserListPage {
  users: Array<Omit<UserRecord, 'client_id'>>;
  total: number;
  limit: number;
  offset: number;
}

/**
 * User management and authorization codes (docs/api.md §3). Inputs arrive checked by the DTOs of
 * user.dto.ts (the controller's ValidationPipe, the CLI through the same pipe).
 */
/** The client a user-management call was authenticated as (ManagingClientGuard). */
export type ManagingClient = ClientRecord & ClientScope;

@Injectable()
export class UsersService {
  constructor(
    private readonly repo: UsersRepository,
    private readonly clientAuth: ClientAuthenticator,
    private readonly grants: GrantService,
    private readonly rateLimit: RateLimitService,
  ) {}

  /** For other modules: this client's user with this service_user_id, or null. */
  findUser(clientId: string, serviceUserId: number): Promise<UserRecord | null> {
    return this.repo.findById({ clientId }, serviceUserId);
  }

  findUserByAppUserId(clientId: string, appUserId: string): Promise<UserRecord | null> {
    return this.repo.findByAppUserId({ clientId }, appUserId);
  }

  async createUser(client: ManagingClient, appUserId: string): Promise<CreatedUser> {
    const existing = await this.repo.findByAppUserId(client, appUserId);
    if (existing) return existingUser(existing);
    const { user, created } = await this.insertWithNewId(client, appUserId);
    if (!created) return existingUser(user);
    const grantUser = { userId: user.service_user_id, appUserId };
    const scopes = this.grants.userScopes(undefined);
    const [tokens, code] = await Promise.all([
      this.grants.issueUserTokens(client, grantUser, scopes),
      this.grants.issueCode(client, grantUser, scopes),
    ]);
    return {
      service_user_id: user.service_user_id,
      app_user_id: appUserId,
      access_token: tokens.access_token,
      refresh_token: tokens.refresh_token,
      code,
      active: user.active,
    };
  }

  async listUsers(ctx: TenantContext, q: ListUsersQuery): Promise<UserListPage> {
    // A user token lists its own user only, and counts against that user's allowance.
    await this.rateLimit.hitUserManagement(
      ctx.clientId,
      ctx.form === 'user-token' ? (ctx.userId ?? undefined) : undefined,
    );
    const limit = pagingParameter('limit', q.limit, {
      fallback: 50,
      min: 1,
      max: MAX_PAGE,
      overMax: 'refuse',
    });
    const offset = pagingParameter('offset', q.offset, { fallback: 0, max: 1_000_000, overMax: 'refuse' });
    const { users, total } = await this.repo.list(ctx, {
      appUserId: q.app_user_id,
      serviceUserId: q.service_user_id,
      limit,
      offset,
    });
    return { users: users.map(({ client_id: _omit, ...u }) => u), total, limit, offset };
  }

  /** PUT: only the name changes (docs/api.md §3); `app_id_user` is the reference's name for the field. */
  async renameUser(
    client: ManagingClient,
    serviceUserId: number,
    newName: string,
  ): Promise<Omit<UserRecord, 'client_id'>> {
    let renamed: UserRecord | null;
    try {
      renamed = await this.repo.rename(client, serviceUserId, newName);
    } catch (e) {
      // another user of the client holds the name: the unique (client, app_user_id) index refuses it
      if (isDuplicateKey(e)) throw nameConflict(newName);
      throw e;
    }
    if (!renamed) throw new NotFoundException(`no user ${serviceUserId} in this client`);
    const { client_id: _omit, ...user } = renamed;
    return user;
  }

  /**
   * The plan's backend (or the operator CLI `user set-sign-in-secret`) sets a member's sign-in
   * secret for the built-in SMART App Launch sign-in. Without `chosen` a random one is made and
   * returned, the only time it is shown. Both are stored scrypt-hashed: a chosen one may be a
   * person's password (a slow KDF is what protects it), and a random one too, so every member's
   * wrong secret, and an unknown member's (the scrypt decoy), costs the same: timing does not tell
   * which members a plan has, nor how their secrets were made.
   */
  async setSignInSecret(
    plan: ClientScope,
    appUserId: string,
    chosen: string | undefined,
  ): Promise<{ service_user_id: number; app_user_id: string; sign_in_secret?: string }> {
    const secret = chosen ?? newSecret();
    const user = await this.repo.setSignInHash(plan, appUserId, await hashChosenSecret(secret));
    if (!user) throw new NotFoundException(`no user "${appUserId}" in this client`);
    return {
      service_user_id: user.service_user_id,
      app_user_id: user.app_user_id,
      ...(chosen === undefined ? { sign_in_secret: secret } : {}),
    };
  }

  /** For the member sign-in: the plan's member and their secret hash (undefined: none set), or null. */
  findSignIn(
    planClientId: string,
    appUserId: string,
  ): Promise<{ user: UserRecord; signInHash?: string } | null> {
    return this.repo.findSignIn({ clientId: planClientId }, appUserId);
  }

  async issueAuthCode(
    client: ManagingClient,
    appUserId: string,
    scope: string | undefined,
  ): Promise<{ code: string; expires_in: number; scope: string }> {
    const scopes = this.grants.userScopes(scope);
    const user = await this.repo.findByAppUserId(client, appUserId);
    if (!user) throw new NotFoundException(`no user "${appUserId}" in this client`);
    const code = await this.grants.issueCode(client, { userId: user.service_user_id, appUserId }, scopes);
    return { code, expires_in: this.grants.codeTtlSeconds, scope: scopes.join(' ') };
  }

  /**
   * Inserts under a fresh service_user_id. A duplicate key is either the (client, app_user_id)
   * index — a concurrent request created this user: answer "already exists" — or the `_id`, when
   * an id was taken by a row written by hand or an import: take the next id.
   */
  private async insertWithNewId(
    client: ClientScope,
    appUserId: string,
  ): Promise<{ user: UserRecord; created: boolean }> {
    for (let attempt = 1; ; attempt++) {
      try {
        const serviceUserId = await this.repo.nextServiceUserId();
        return { user: await this.repo.insert(client, { serviceUserId, appUserId }), created: true };
      } catch (e) {
        if (!isDuplicateKey(e) || attempt >= 10) throw e;
        const winner = await this.repo.findByAppUserId(client, appUserId);
        if (winner) return { user: winner, created: false };
      }
    }
  }

  /** Client authentication for the user-management routes (ManagingClientGuard), counted against the hourly limit. */
  async authenticateClient(creds: PresentedClientCredentials | null): Promise<ManagingClient> {
    if (!creds) throw unauthorized('client_id and client_secret are required (body or headers)');
    const client = await this.clientAuth.authenticate(creds.clientId, creds.secret, creds.address);
    if (!client) throw unauthorized('unknown client, wrong secret, or disabled client');
    await this.rateLimit.hitUserManagement(client.clientId);
    return client;
  }
}

function unauthorized(message: string): HttpException {
  const e = new HttpException({ error: 'unauthorized', message }, 401);
  (e as HttpException & { headers: Record<string, string> }).headers = {
    'WWW-Authenticate': 'Bearer realm="user-management"',
  };
  return e;
}

function nameConflict(appUserId: string): ConflictException {
  return new ConflictException(`app_user_id "${appUserId}" is already used by another user of this client`);
}

function existingUser(user: UserRecord): CreatedUser {
  return {
    service_user_id: user.service_user_id,
    app_user_id: user.app_user_id,
    active: user.active,
    message: USER_EXISTS_MESSAGE,
  };
}
