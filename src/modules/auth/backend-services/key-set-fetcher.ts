import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { TtlCache } from '../ttl-cache';
import { parseJwks, type ClientPublicKey } from './client-keys';

/** Limits of fetching a client's JWK Set by URL (docs/security.md "Client key sets"). */
export interface KeySetFetchOptions {
  /** The response is abandoned once this many bytes arrived (or were announced). */
  maxBytes: number;
  /** The whole exchange (connect, headers, body) must end within this. */
  timeoutMs: number;
  /** Keys are kept at least this long, whatever the caching headers say. */
  minTtlMs: number;
  /** And at most this long. */
  maxTtlMs: number;
  /** Without caching headers. */
  defaultTtlMs: number;
  /** A failed fetch is remembered this long: no request in between contacts the URL. */
  failureTtlMs: number;
  /** URLs whose keys (or failure) are kept. */
  maxEntries: number;
}

export const KEY_SET_FETCH_DEFAULTS: KeySetFetchOptions = {
  maxBytes: 64 * 1024,
  timeoutMs: 3_000,
  minTtlMs: 60_000,
  maxTtlMs: 24 * 3600_000,
  defaultTtlMs: 5 * 60_000,
  failureTtlMs: 30_000,
  maxEntries: 1_000,
};

/** Why a key set could not be used. The message is for the server's log, never for the caller. */
export class KeySetFetchError extends Error {}

type Outcome = { keys: ClientPublicKey[] } | { error: KeySetFetchError };

/**
 * The keys published at a client's JWK Set URL
 * (https://hl7.org/fhir/smart-app-launch/backend-services.html#registering-a-client-communicating-public-keys):
 * read as a stream with a hard byte cap and one deadline, redirects not followed (a 3xx is a
 * failure), kept per the response's Cache-Control / Expires within [minTtlMs, maxTtlMs], failures
 * kept for failureTtlMs, concurrent requests for one URL sharing one fetch.
 */
export class KeySetFetcher {
  private readonly cache: TtlCache<Outcome>;
  private readonly inFlight = new Map<string, Promise<Outcome>>();

  constructor(
    private readonly opts: KeySetFetchOptions = KEY_SET_FETCH_DEFAULTS,
    private readonly now: () => number = Date.now,
  ) {
    this.cache = new TtlCache<Outcome>(opts.defaultTtlMs, opts.maxEntries, now);
  }

  /** The URL's keys; throws KeySetFetchError (cached briefly) when they cannot be had. */
  async keys(url: string): Promise<ClientPublicKey[]> {
    const outcome = this.cache.get(url) ?? (await this.fetchOnce(url));
    if ('error' in outcome) throw outcome.error;
    return outcome.keys;
  }

  private fetchOnce(url: string): Promise<Outcome> {
    let pending = this.inFlight.get(url);
    if (!pending) {
      pending = this.fetchAndCache(url).finally(() => this.inFlight.delete(url));
      this.inFlight.set(url, pending);
    }
    return pending;
  }

  private async fetchAndCache(url: string): Promise<Outcome> {
    let outcome: Outcome;
    let ttl = this.opts.failureTtlMs;
    try {
      const { text, headers } = await fetchBounded(url, this.opts);
      outcome = { keys: parseJwks(text) };
      ttl = cacheTtlMs(headers, this.opts, this.now());
    } catch (error) {
      outcome = {
        error: error instanceof KeySetFetchError ? error : new KeySetFetchError((error as Error).message),
      };
    }
    this.cache.set(url, outcome, ttl);
    return outcome;
  }
}

/**
 * How long a response may be kept (RFC 9111 §4.2.1: `max-age`, else `Expires` − `Date`), clamped
 * to [minTtlMs, maxTtlMs]; `no-store` / `no-cache` → the minimum, no header → the default.
 */
export function cacheTtlMs(headers: IncomingHttpHeaders, opts: KeySetFetchOptions, now: number): number {
  const clamp = (ms: number) => Math.min(opts.maxTtlMs, Math.max(opts.minTtlMs, ms));
  const cacheControl = (headers['cache-control'] ?? '').toLowerCase();
  if (/(?:^|[\s,])(?:no-store|no-cache)(?:$|[\s,=])/.test(cacheControl)) return opts.minTtlMs;
  const maxAge = /(?:^|[\s,])max-age\s*=\s*"?(\d+)/.exec(cacheControl);
  if (maxAge) return clamp(Number(maxAge[1]) * 1000);
  const expires = headers.expires ? Date.parse(headers.expires) : NaN;
  if (!Number.isNaN(expires)) {
    const date = headers.date ? Date.parse(headers.date) : NaN;
    return clamp(expires - (Number.isNaN(date) ? now : date));
  }
  return opts.defaultTtlMs;
}

/**
 * GETs `url` and reads at most `maxBytes` of its body within `timeoutMs` (connect included). No
 * redirect is followed. Anything else → KeySetFetchError; the socket is destroyed at once, so a
 * server sending more never gets it read.
 */
export function fetchBounded(
  url: string,
  opts: Pick<KeySetFetchOptions, 'maxBytes' | 'timeoutMs'>,
): Promise<{ text: string; headers: IncomingHttpHeaders }> {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    return Promise.reject(new KeySetFetchError(`${url} is not a URL`));
  }
  const request =
    target.protocol === 'https:' ? httpsRequest : target.protocol === 'http:' ? httpRequest : undefined;
  if (!request) return Promise.reject(new KeySetFetchError(`${url} is not http(s)`));
  return new Promise((resolve, reject) => {
    let done = false;
    const finish = (error: Error | undefined, value?: { text: string; headers: IncomingHttpHeaders }) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (error) {
        req.destroy();
        reject(error instanceof KeySetFetchError ? error : new KeySetFetchError(`${url}: ${error.message}`));
      } else resolve(value!);
    };
    const timer = setTimeout(
      () => finish(new KeySetFetchError(`${url} did not answer within ${opts.timeoutMs} ms`)),
      opts.timeoutMs,
    );
    const req = request(target, { method: 'GET', headers: { accept: 'application/json' } }, (res) => {
      const status = res.statusCode ?? 0;
      if (status < 200 || status >= 300) {
        res.resume();
        return finish(
          new KeySetFetchError(
            `${url} answered ${status}${status >= 300 && status < 400 ? ' (redirects are not followed)' : ''}`,
          ),
        );
      }
      const announced = Number(res.headers['content-length']);
      if (announced > opts.maxBytes) {
        return finish(
          new KeySetFetchError(`${url} announced ${announced} bytes, more than ${opts.maxBytes}`),
        );
      }
      const chunks: Buffer[] = [];
      let received = 0;
      res.on('data', (chunk: Buffer) => {
        received += chunk.length;
        if (received > opts.maxBytes) {
          finish(new KeySetFetchError(`${url} sent more than ${opts.maxBytes} bytes`));
          return;
        }
        chunks.push(chunk);
      });
      res.on('end', () =>
        finish(undefined, { text: Buffer.concat(chunks).toString('utf8'), headers: res.headers }),
      );
      res.on('error', (error) => finish(error));
    });
    req.on('error', (error) => finish(error));
    req.end();
  });
}
