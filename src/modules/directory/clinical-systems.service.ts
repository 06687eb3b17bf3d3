import { Injectable, UnauthorizedException } from '@nestjs/common';
import { ClientsService } from '../../tenancy';
import { DirectoryPage } from './directory.repository';
import { DirectoryService } from './directory.service';

/** Client credentials as sent: headers, query string or form body (first found wins, in that order). */
export interface PresentedClientCredentials {
  clientId?: unknown;
  clientSecret?: unknown;
}

/** `{base_url}/connect/system/clinical` (SPEC §4.9): the supported systems, for a client. */
@Injectable()
export class ClinicalSystemsService {
  constructor(
    private readonly clients: ClientsService,
    private readonly directory: DirectoryService,
  ) {}

  async list(
    credentials: PresentedClientCredentials,
    systemType: unknown,
    query: unknown,
  ): Promise<DirectoryPage> {
    const { clientId, clientSecret } = credentials;
    const client =
      typeof clientId === 'string' && typeof clientSecret === 'string'
        ? await this.clients.authenticate(clientId, clientSecret)
        : null;
    if (!client) {
      throw new UnauthorizedException({
        error: 'invalid_client',
        message: 'client_id and client_secret are required and must be valid (headers, query or form body)',
      });
    }
    return this.directory.clinicalList(systemType, query);
  }
}
