import { OAuthError } from './oauth-error';

/** A token request parameter: a non-empty string, else undefined (arrays and objects are not parameters). */
export function param(body: Record<string, unknown>, name: string): string | undefined {
  const v = body[name];
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/** A parameter the request must carry: invalid_request (RFC 6749 §5.2) when missing. */
export function required(body: Record<string, unknown>, name: string): string {
  const v = param(body, name);
  if (!v) throw new OAuthError('invalid_request', `${name} is required`);
  return v;
}
