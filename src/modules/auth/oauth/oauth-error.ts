import { HttpException } from '@nestjs/common';

/** RFC 6749 §5.2 error codes (plus RFC 6749 §4.1.2.1's invalid_scope). */
export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'invalid_scope';

/**
 * A token-endpoint error answered verbatim as `{ error, error_description }` (RFC 6749 §5.2): the
 * global filter passes an HttpException body with an `error` string through on non-FHIR routes.
 */
export class OAuthError extends HttpException {
  readonly headers: Record<string, string>;

  constructor(
    error: OAuthErrorCode,
    description: string,
    status = 400,
    headers: Record<string, string> = {},
  ) {
    super({ error, error_description: description }, status);
    this.headers = { 'Cache-Control': 'no-store', Pragma: 'no-cache', ...headers };
  }

  /** 401 with a challenge naming the authentication scheme the client tried (RFC 6749 §5.2). */
  static invalidClient(usedBasic: boolean): OAuthError {
    return new OAuthError('invalid_client', 'client authentication failed', 401, {
      'WWW-Authenticate': usedBasic ? 'Basic realm="token"' : 'Bearer realm="token"',
    });
  }
}
