import { grantsNoWrite } from './smart-scopes';

/**
 * Who is asking, resolved once by the tenant guard from one of the credential forms of docs/api.md §2,
 * and passed explicitly as the first argument down to every repository method.
 */
export type CredentialForm = 'user-token' | 'client-token' | 'client-headers';

export interface TenantContext {
  /** client_id of the client application; every query is limited to it. */
  readonly clientId: string;
  /** service_user_id of the one user in scope; null = all users of the client (GET only). */
  readonly userId: number | null;
  /** OAuth scopes granted (`user/*.*`, `user/*.rs`, `bulk-data`, …). */
  readonly scopes: readonly string[];
  readonly form: CredentialForm;
  /** The client's customer slug (population-level export path). */
  readonly customer?: string;
  /** Set when the token came from a member's SMART App Launch grant (the member is `userId` of the plan `clientId`). */
  readonly launch?: { readonly app: string; readonly patient?: string; readonly grant: string };
  /**
   * Set by admission on a FHIR request: charges the client's share with stored bytes the engine
   * read for this request but did not answer (ClientSlot.chargeUnservedReads). The storage layer
   * calls it where it knows them (byte-budgeted pages); absent elsewhere (CLI, jobs).
   */
  readonly chargeUnservedReads?: (bytes: number) => void;
  /**
   * Set by admission on a FHIR request: called as a database command is sent; the function it
   * returns, once the reply is in, charges the caller's share with the command's part of the
   * database's time (admission's processor-sharing DatabaseClock).
   */
  readonly startDatabaseCommand?: () => () => void;
  /**
   * Set by admission on a FHIR request: charges the caller's share with event-loop time a step of
   * the request took after admission (its resources' validation: admission's timedOnLoop).
   */
  readonly chargeLoopMs?: (ms: number) => void;
}

/**
 * The client only, for client-owned records that are not per-user data (the user list, auth
 * codes). A `TenantContext` is a `ClientScope`; so is the result of authenticating a client.
 * Their queries are scoped by storage/tenant-scope.ts `clientScope`, as every tenant filter is.
 */
export interface ClientScope {
  readonly clientId: string;
}

/** True when the context may only read and search (scope `user/*.rs`, `*.read`, `patient/*.rs` …). */
export function isReadOnly(ctx: TenantContext): boolean {
  return grantsNoWrite(ctx);
}
