import { Inject, Injectable } from '@nestjs/common';
import { OperationOutcomeError } from '@app/fhir';
import { SETTINGS } from '../config/config.module';
import { Settings } from '../config/settings';

/**
 * FHIR requests in flight per client in this process (issue 16 item 3, tenant fairness): one
 * client's burst of heavy requests holds at most CLIENT_MAX_CONCURRENT_REQUESTS of the database
 * pool and the event loop; the next one is answered 429 with Retry-After at once instead of
 * queueing in front of every other tenant.
 */
@Injectable()
export class ClientConcurrency {
  private readonly inFlight = new Map<string, number>();

  constructor(@Inject(SETTINGS) private readonly settings: Settings) {}

  /** Takes a slot for the client (throws 429 when none is free); the returned function gives it back once. */
  acquire(clientId: string): () => void {
    const current = this.inFlight.get(clientId) ?? 0;
    const limit = this.settings.clientMaxConcurrentRequests;
    if (current >= limit) {
      throw new OperationOutcomeError(
        'throttled',
        `this client already has ${limit} FHIR requests in progress (CLIENT_MAX_CONCURRENT_REQUESTS); retry shortly`,
        { status: 429, headers: { 'Retry-After': '1' } },
      );
    }
    this.inFlight.set(clientId, current + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.inFlight.get(clientId) ?? 1) - 1;
      if (left <= 0) this.inFlight.delete(clientId);
      else this.inFlight.set(clientId, left);
    };
  }
}
