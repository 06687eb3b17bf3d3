import { Injectable, UnauthorizedException } from '@nestjs/common';
import { ClientAuthenticator } from '../auth/rate-limit/client-authenticator';
import { DirectoryPage } from './directory.repository';
import { DirectoryService } from './directory.service';

/** Client credentials as sent: headers, query string or form body (first found wins, in that order). */
export interface PresentedClientCredentials {
  clientId?: unknown;
  clientSecret?: unknown;
  /** Source address of the request: failed authentications are throttled per client and address. */
  address: string;
}

/** `{base_url}/connect/system/clinical` (docs/api.md §11): the supported systems, for a client. */
@Injectable()
export class ClinicalSystemsService {
  constructor(
    private readonly clientAuth: ClientAuthenticator,
    private readonly directory: DirectoryService,
  ) {}

  async list(
    credentials: PresentedClientCredentials,
    systemType: unknown,
    query: unknown,
    offset?: unknown,
  ): Promise<DirectoryPage> {
    const { clientId, clientSecret, address } = credentials;
    const client =
      typeof clientId === 'string' && typeof clientSecret === 'string'
        ? await this.clientAuth.authenticate(clientId, clientSecret, address)
        : null;
    if (!client) {
      throw new UnauthorizedException({
        error: 'invalid_client',
        message: 'client_id and client_secret are required and must be valid (headers, query or form body)',
      });
    }
    return this.directory.clinicalList(systemType, query, offset);
  }
}
