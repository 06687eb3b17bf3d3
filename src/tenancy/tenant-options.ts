/** What a route asks of the tenant guard (see `UseTenant`). */
export interface TenantOptions {
  /** Client-wide contexts (`x-service-user-id: client`, client-level token without a user):
   * 'get-only' (default) allows them on reads only; 'never' refuses them on this route. */
  clientWide?: 'get-only' | 'never';
  /** A POST that only reads (e.g. `_search`): treated as a read for scope and client-wide checks. */
  readRoute?: boolean;
  /** Only `Authorization: Bearer` is accepted. */
  bearerOnly?: boolean;
  /** The route acts on one user: client-wide contexts are refused (400). */
  userRequired?: boolean;
  /** Client headers without a user header mean the whole client (user-management list). */
  userHeaderOptional?: boolean;
}
