import { Injectable } from '@nestjs/common';
import { ClientRecord } from '../clients/client.schema';
import { ClientsService } from '../clients/clients.service';
import { RateLimitService, TooManyRequests } from './rate-limit.service';

/** Longest client id counted (a longer one is never a real client, and keys stay small). */
const MAX_KEY_ID = 200;

/**
 * Client authentication with failures throttled per (client id, source address) and per source
 * address (docs/security.md). Every place that checks a client secret goes through here.
 */
@Injectable()
export class ClientAuthenticator {
  constructor(
    private readonly clients: ClientsService,
    private readonly rateLimit: RateLimitService,
  ) {}

  /**
   * The client, or null for a wrong id/secret (counted as a failure of this source). A throttled
   * source gets 429 without a verification, unless it presents the exact secret this process
   * verified as right within the last minute (the owner, e.g. behind the attacker's NAT, keeps
   * working; an attacker learns nothing it did not know).
   */
  async authenticate(clientId: string, secret: string, address: string): Promise<ClientRecord | null> {
    const id = clientId.slice(0, MAX_KEY_ID);
    try {
      await this.rateLimit.checkAuthFailures(id, address);
    } catch (error) {
      // only a refusal of this source; a database error is answered as such (503)
      if (!(error instanceof TooManyRequests)) throw error;
      const known = this.clients.recentlyVerified(clientId, secret);
      if (known) return known;
      throw error;
    }
    const client = await this.clients.authenticate(clientId, secret);
    if (!client) await this.rateLimit.recordAuthFailure(id, address);
    return client;
  }
}
