/**
 * The OpenAPI security schemes of the credentials the guard layer accepts (a bearer token, or the
 * client headers with a user header); configure-app registers them, routes name the ones they take.
 */
export const SECURITY = {
  bearer: 'bearer',
  clientId: 'client_id',
  clientSecret: 'client_secret',
  serviceUserId: 'x-service-user-id',
  appUserId: 'x-app-user-id',
} as const;
