import { generateKeyPairSync } from 'node:crypto';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KEY_SET_FETCH_DEFAULTS, KeySetFetcher, KeySetFetchError, cacheTtlMs } from './key-set-fetcher';

const HUNDRED_MB = 100 * 1024 * 1024;
const CHUNK = Buffer.alloc(64 * 1024, 0x20);
const jwks = JSON.stringify({
  keys: [
    { ...generateKeyPairSync('ec', { namedCurve: 'P-384' }).publicKey.export({ format: 'jwk' }), kid: 'k' },
  ],
});

/** A real HTTP server: what each path serves, and how many bytes / requests it served. */
describe('KeySetFetcher (against a local HTTP server)', () => {
  let server: Server;
  let base: string;
  const served = { bytes: 0 };
  const hits = new Map<string, number>();

  /** Writes up to 100 MB as fast as the socket takes it, counting what the socket accepted. */
  const flood = (res: ServerResponse, headers: Record<string, string> = {}) => {
    res.writeHead(200, { 'Content-Type': 'application/json', ...headers });
    res.write('{"keys":[');
    let sent = 0;
    const pump = () => {
      while (sent < HUNDRED_MB && !res.destroyed) {
        sent += CHUNK.length;
        served.bytes += CHUNK.length;
        if (!res.write(CHUNK)) return void res.once('drain', pump);
      }
      res.end();
    };
    pump();
  };

  beforeAll(async () => {
    server = createServer((req, res) => {
      const path = req.url ?? '';
      hits.set(path, (hits.get(path) ?? 0) + 1);
      if (path === '/huge') return flood(res);
      if (path === '/huge-announced') {
        return flood(res, { 'Content-Length': String(HUNDRED_MB + 9) });
      }
      if (path === '/redirect') return res.writeHead(302, { Location: '/jwks' }).end();
      if (path === '/slow') return void setTimeout(() => res.end(jwks), 5_000).unref();
      if (path === '/trickle') {
        res.writeHead(200);
        res.write('{"keys":');
        return; // never ends
      }
      if (path === '/error') return res.writeHead(500).end('boom');
      if (path === '/short-lived') return res.writeHead(200, { 'Cache-Control': 'max-age=0' }).end(jwks);
      res.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'max-age=600' }).end(jwks);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const fetcher = (now?: () => number) =>
    new KeySetFetcher({ ...KEY_SET_FETCH_DEFAULTS, timeoutMs: 500 }, now);

  it('stops reading a 100 MB answer at the byte cap', async () => {
    served.bytes = 0;
    await expect(fetcher().keys(`${base}/huge`)).rejects.toThrow(/more than 65536 bytes/);
    await new Promise((r) => setTimeout(r, 100));
    // what the server could push into the socket buffers before the read stopped, far below 100 MB
    expect(served.bytes).toBeLessThan(16 * 1024 * 1024);
  });

  it('refuses an announced Content-Length over the cap before reading', async () => {
    await expect(fetcher().keys(`${base}/huge-announced`)).rejects.toThrow(/announced/);
  });

  it('does not follow redirects', async () => {
    hits.delete('/jwks');
    await expect(fetcher().keys(`${base}/redirect`)).rejects.toThrow(/302.*redirects are not followed/);
    expect(hits.get('/jwks')).toBeUndefined();
  });

  it('gives up on a slow server and on a body that never ends', async () => {
    await expect(fetcher().keys(`${base}/slow`)).rejects.toThrow(/within 500 ms/);
    await expect(fetcher().keys(`${base}/trickle`)).rejects.toThrow(/within 500 ms/);
  });

  it('keeps keys per Cache-Control, at least the minimum, and shares one fetch among concurrent callers', async () => {
    let now = 1_000_000;
    const f = fetcher(() => now);
    hits.set('/jwks', 0);
    const results = await Promise.all(Array.from({ length: 10 }, () => f.keys(`${base}/jwks`)));
    expect(results.every((keys) => keys[0].kid === 'k')).toBe(true);
    expect(hits.get('/jwks')).toBe(1);
    now += 599_000;
    await f.keys(`${base}/jwks`);
    expect(hits.get('/jwks')).toBe(1);
    now += 2_000;
    await f.keys(`${base}/jwks`);
    expect(hits.get('/jwks')).toBe(2);

    hits.set('/short-lived', 0);
    await f.keys(`${base}/short-lived`);
    now += KEY_SET_FETCH_DEFAULTS.minTtlMs - 1;
    await f.keys(`${base}/short-lived`);
    expect(hits.get('/short-lived')).toBe(1); // max-age=0 is held for the minimum
  });

  it('remembers a failure briefly: no request in between reaches the URL', async () => {
    let now = 5_000_000;
    const f = fetcher(() => now);
    hits.set('/error', 0);
    for (let i = 0; i < 5; i++)
      await expect(f.keys(`${base}/error`)).rejects.toBeInstanceOf(KeySetFetchError);
    expect(hits.get('/error')).toBe(1);
    now += KEY_SET_FETCH_DEFAULTS.failureTtlMs;
    await expect(f.keys(`${base}/error`)).rejects.toThrow(/answered 500/);
    expect(hits.get('/error')).toBe(2);
  });

  it('reads caching headers: max-age, Expires, no-store, clamped', () => {
    const o = KEY_SET_FETCH_DEFAULTS;
    expect(cacheTtlMs({ 'cache-control': 'public, max-age=3600' }, o, 0)).toBe(3_600_000);
    expect(cacheTtlMs({ 'cache-control': 'max-age=10' }, o, 0)).toBe(o.minTtlMs);
    expect(cacheTtlMs({ 'cache-control': 'max-age=99999999' }, o, 0)).toBe(o.maxTtlMs);
    expect(cacheTtlMs({ 'cache-control': 'no-store' }, o, 0)).toBe(o.minTtlMs);
    const date = 'Mon, 23 Nov 2026 10:00:00 GMT';
    expect(cacheTtlMs({ date, expires: 'Mon, 23 Nov 2026 12:00:00 GMT' }, o, 0)).toBe(7_200_000);
    expect(cacheTtlMs({}, o, 0)).toBe(o.defaultTtlMs);
  });
});
