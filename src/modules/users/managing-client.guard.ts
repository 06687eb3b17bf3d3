import { CanActivate, createParamDecorator, ExecutionContext, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import type { ClientScope } from '../../tenancy/tenant-context';
import type { ClientRecord } from '../auth/clients/client.schema';
import { presentedClientCredentials } from '../auth/clients/client-credentials';
import { UsersService } from './users.service';

type ManagingClient = ClientRecord & ClientScope;

const authenticated = new WeakMap<Request, ManagingClient>();

/**
 * The user-management routes authenticate the calling client in a guard, so authentication comes
 * before the body is checked: a caller without valid credentials gets 401 and learns nothing about
 * the body's rules (a 400), and every authenticated call is counted against the hourly limit.
 */
@Injectable()
export class ManagingClientGuard implements CanActivate {
  constructor(private readonly users: UsersService) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const req = context.switchToHttp().getRequest<Request>();
    authenticated.set(req, await this.users.authenticateClient(presentedClientCredentials(req)));
    return true;
  }
}

/** The client `ManagingClientGuard` authenticated for this request. */
export const ManagingClientOf = createParamDecorator((_data: unknown, context: ExecutionContext) => {
  const client = authenticated.get(context.switchToHttp().getRequest<Request>());
  if (!client) throw new Error('ManagingClientOf used on a route without ManagingClientGuard');
  return client;
});
