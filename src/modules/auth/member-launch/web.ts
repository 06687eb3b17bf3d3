import { randomBytes, timingSafeEqual } from 'crypto';
import type { Request, Response } from 'express';

/** The browser cookies of the member pages (HttpOnly; SameSite=Lax so the app's redirect to authorize carries them). */
export const SESSION_COOKIE = 'member_session';
export const CSRF_COOKIE = 'member_csrf';
const COOKIE_PATH = '/oauth2';

/** One cookie of the request (no cookie-parser: two cookies, read here only). */
export function cookie(req: Request, name: string): string | undefined {
  const header = req.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) {
      const value = part.slice(eq + 1).trim();
      return /^[A-Za-z0-9_-]{1,100}$/.test(value) ? value : undefined;
    }
  }
  return undefined;
}

export function setCookie(
  res: Response,
  name: string,
  value: string,
  secure: boolean,
  maxAgeSeconds?: number,
): void {
  res.cookie(name, value, {
    httpOnly: true,
    sameSite: 'lax',
    secure,
    path: COOKIE_PATH,
    ...(maxAgeSeconds !== undefined ? { maxAge: maxAgeSeconds * 1000 } : {}),
  });
}

export function clearCookie(res: Response, name: string, secure: boolean): void {
  res.clearCookie(name, { httpOnly: true, sameSite: 'lax', secure, path: COOKIE_PATH });
}

/**
 * The CSRF token of this browser (double-submit, OWASP CSRF cheat sheet): a random value in an
 * HttpOnly cookie that every form repeats in its `csrf` field. Another site can make the browser
 * send the cookie but can neither read it nor set it, so it cannot fill the field.
 */
export function csrfToken(req: Request, res: Response, secure: boolean): string {
  const existing = cookie(req, CSRF_COOKIE);
  if (existing) return existing;
  const made = randomBytes(32).toString('base64url');
  setCookie(res, CSRF_COOKIE, made, secure);
  return made;
}

export function csrfMatches(req: Request, field: unknown): boolean {
  const expected = cookie(req, CSRF_COOKIE);
  if (!expected || typeof field !== 'string' || field.length !== expected.length) return false;
  return timingSafeEqual(Buffer.from(field), Buffer.from(expected));
}

/**
 * Headers of every member page: no framing (clickjacking of the consent button), no third-party
 * anything, forms posting here only, except where a decision then redirects to the app
 * (`formTargets`: CSP form-action also governs the redirect that follows a form submission).
 */
export function pageHeaders(res: Response, formTargets: readonly string[] = []): void {
  res.setHeader(
    'Content-Security-Policy',
    [
      "default-src 'none'",
      "style-src 'self'",
      "img-src 'self' data:",
      `form-action 'self'${formTargets.map((t) => ` ${t}`).join('')}`,
      "frame-ancestors 'none'",
      "base-uri 'none'",
    ].join('; '),
  );
  res.setHeader('X-Frame-Options', 'DENY');
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.setHeader('Content-Type', 'text/html; charset=utf-8');
}

/** A CSP source expression for a redirect URI: its origin (http/https) or its scheme (native apps). */
export function formTarget(redirectUri: string): string | undefined {
  try {
    const url = new URL(redirectUri);
    if (url.protocol === 'https:' || url.protocol === 'http:') return url.origin;
    return /^[a-z][a-z0-9+.-]*:$/.test(url.protocol) ? url.protocol : undefined;
  } catch {
    return undefined;
  }
}
