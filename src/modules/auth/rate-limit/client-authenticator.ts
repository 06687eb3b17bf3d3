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
   * The client, or null for a wrong id/secret (counted as a failure of this source). The exact
   * secret this process verified as right within the last minute passes at once, throttled source
   * or not (the owner, e.g. behind the attacker's NAT, keeps working; an attacker learns nothing it
   * did not know). Any other presentation takes a failure slot first: a throttled source gets 429
   * without a database read or a verification.
   */
  /**
   * The 429 `authenticate` would answer now from memory (a throttled source, a secret not
   * verified as right recently), or undefined; synchronous, nothing taken. Admission's early
   * refusal asks it before the request is logged, routed or its body parsed.
   */
  knownRefusal(clientId: string, secret: string, address: string): TooManyRequests | undefined {
    if (this.clients.recentlyVerified(clientId, secret)) return undefined;
    return this.rateLimit.knownRefusal(clientId.slice(0, MAX_KEY_ID), address);
  }

  /** The 429 the address was last given in its current window, from memory (RateLimitService.refusedLately). */
  refusedLately(address: string): TooManyRequests | undefined {
    return this.rateLimit.refusedLately(address);
  }

  async authenticate(clientId: string, secret: string, address: string): Promise<ClientRecord | null> {
    const known = this.clients.recentlyVerified(clientId, secret);
    if (known) return known;
    const keyId = clientId.slice(0, MAX_KEY_ID);
    const attempt = await this.rateLimit.reserveAuthAttempt(keyId, address);
    let client: ClientRecord | null;
    try {
      client = await this.rateLimit.paced(
        keyId,
        address,
        () => this.clients.authenticate(clientId, secret),
        (found) => found === null,
      );
    } catch (error) {
      await attempt.release();
      throw error;
    }
    if (client) await attempt.release();
    else attempt.failed();
    return client;
  }
}
