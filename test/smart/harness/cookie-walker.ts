/**
 * A minimal browser over HTTP for the tests that drive the upstream provider's own pages without
 * Chromium: a cookie jar per origin and redirects followed until they leave the allowed origins.
 */
export class CookieWalker {
  private readonly jar = new Map<string, Map<string, string>>();

  constructor(private readonly origins: string[]) {}

  /** Follows redirects from `url`; returns the first URL outside the walker's origins, or the last page. */
  async follow(
    url: string,
    init: { method?: string; form?: Record<string, string> | URLSearchParams } = {},
  ): Promise<WalkEnd> {
    let next = url;
    let method = init.method ?? 'GET';
    let body: string | undefined = init.form ? new URLSearchParams(init.form).toString() : undefined;
    for (let hop = 0; hop < 20; hop++) {
      const origin = new URL(next).origin;
      if (!this.origins.includes(origin)) return { left: next };
      const headers: Record<string, string> = { cookie: this.cookieHeader(origin) };
      if (body !== undefined) headers['content-type'] = 'application/x-www-form-urlencoded';
      const res = await fetch(next, { method, headers, body, redirect: 'manual' });
      this.store(origin, res.headers.getSetCookie());
      const location = res.headers.get('location');
      if (res.status >= 300 && res.status < 400 && location) {
        next = new URL(location, next).toString();
        method = 'GET';
        body = undefined;
        continue;
      }
      return { page: { url: next, status: res.status, html: await res.text() } };
    }
    throw new Error('too many redirects');
  }

  /** A cookie this walker holds for `origin` (HttpOnly ones too: a test reads what a browser keeps). */
  cookie(origin: string, name: string): string | undefined {
    return this.jar.get(origin)?.get(name);
  }

  private cookieHeader(origin: string): string {
    return [...(this.jar.get(origin) ?? new Map()).entries()].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  private store(origin: string, setCookies: string[]): void {
    const cookies = this.jar.get(origin) ?? new Map<string, string>();
    for (const line of setCookies) {
      const [pair] = line.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      if (/expires=Thu, 01 Jan 1970/i.test(line) || value === '') cookies.delete(name);
      else cookies.set(name, value);
    }
    this.jar.set(origin, cookies);
  }
}

export type WalkEnd =
  | { left: string; page?: undefined }
  | { left?: undefined; page: { url: string; status: number; html: string } };

/** The `action` of the page's first form, absolute. */
export function formAction(page: { url: string; html: string }): string {
  const action = /<form[^>]*action="([^"]+)"/.exec(page.html)?.[1];
  if (!action) throw new Error(`no form on ${page.url}: ${page.html.slice(0, 500)}`);
  return new URL(action.replace(/&amp;/g, '&'), page.url).toString();
}

/** The href of the first link whose text matches. */
export function linkHref(page: { url: string; html: string }, text: RegExp): string {
  for (const m of page.html.matchAll(/<a[^>]*href="([^"]+)"[^>]*>([^<]*)<\/a>/g)) {
    if (text.test(m[2])) return new URL(m[1].replace(/&amp;/g, '&'), page.url).toString();
  }
  throw new Error(`no link ${text} on ${page.url}`);
}
