import { createServer, get, IncomingMessage, Server } from 'http';
import type { AddressInfo } from 'net';
import type { ServerResponse as Response } from 'http';
import { LineSource, streamNdjson } from './ndjson-response';

/** A cursor stand-in producing `total` lines of `size` characters, recording how far it was read. */
function fakeCursor(total: number, size: number) {
  const state = { pulled: 0, closed: false };
  const line = Buffer.from(JSON.stringify({ resourceType: 'Basic', pad: 'x'.repeat(size) }));
  const source: LineSource = {
    async *[Symbol.asyncIterator]() {
      for (let i = 0; i < total && !state.closed; i += 1) {
        state.pulled += 1;
        yield [i === 3 ? null : line];
      }
    },
    close: async () => {
      state.closed = true;
    },
  };
  return { source, state };
}

describe('streamNdjson (real HTTP socket)', () => {
  let server: Server;
  let port: number;
  let handler: (res: Response) => Promise<void>;

  beforeAll(async () => {
    server = createServer((_req, res) => void handler(res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  function open(): Promise<IncomingMessage> {
    return new Promise((resolve, reject) =>
      get({ host: '127.0.0.1', port, path: '/' }, resolve).on('error', reject),
    );
  }

  it('writes one line per resource, skips tombstones, sets the NDJSON content type', async () => {
    const { source, state } = fakeCursor(10, 10);
    let result: { lines: number; bytes: number } | undefined;
    handler = async (res) => {
      result = await streamNdjson(res, source);
    };
    const res = await open();
    expect(res.headers['content-type']).toBe('application/fhir+ndjson');
    let body = '';
    for await (const chunk of res) body += String(chunk);
    const lines = body.split('\n');
    expect(lines.pop()).toBe('');
    expect(lines).toHaveLength(9);
    expect(lines.every((l) => JSON.parse(l).resourceType === 'Basic')).toBe(true);
    expect(result).toEqual({ lines: 9, bytes: Buffer.byteLength(body) });
    expect(state.closed).toBe(true);
  });

  it('reused chunks: lines of every size (one above a chunk) over many batches arrive byte for byte', async () => {
    const expected: string[] = [];
    const source: LineSource = {
      async *[Symbol.asyncIterator]() {
        for (let b = 0; b < 300; b += 1) {
          const batch: Uint8Array[] = [];
          for (let i = 0; i < 40; i += 1) {
            const size = b === 7 && i === 3 ? 200_000 : (b * 131 + i * 977) % 5000;
            const line = JSON.stringify({ b, i, pad: String.fromCharCode(97 + ((b + i) % 26)).repeat(size) });
            expected.push(line);
            batch.push(Buffer.from(line));
          }
          yield batch;
          // let the socket drain now and then, so that written chunks are reused
          if (b % 10 === 0) await new Promise((r) => setImmediate(r));
        }
      },
      close: async () => undefined,
    };
    handler = async (res) => {
      await streamNdjson(res, source);
    };
    const res = await open();
    const parts: Buffer[] = [];
    for await (const chunk of res) parts.push(chunk as Buffer);
    const lines = Buffer.concat(parts).toString('utf8').split('\n');
    expect(lines.pop()).toBe('');
    expect(lines.length).toBe(expected.length);
    const bad = lines.findIndex((line, i) => line !== expected[i]);
    expect(bad).toBe(-1);
  });

  it('does not read ahead of a client that does not read (back-pressure)', async () => {
    const { source, state } = fakeCursor(100_000, 1000); // ~100 MB if it were all buffered
    let finished: Promise<unknown> = Promise.resolve();
    handler = async (res) => {
      finished = streamNdjson(res, source);
      await finished;
    };
    const res = await open();
    res.pause();
    await new Promise((r) => setTimeout(r, 300));
    // Socket buffers on both sides hold a few MB at most: far below the 100,000 lines.
    expect(state.pulled).toBeLessThan(20_000);
    res.destroy();
    await finished;
    expect(state.closed).toBe(true);
    expect(state.pulled).toBeLessThan(20_000);
  });

  it('stops reading the cursor when the client disconnects', async () => {
    const { source, state } = fakeCursor(1_000_000, 200);
    let finished: Promise<unknown> = Promise.resolve();
    handler = async (res) => {
      finished = streamNdjson(res, source);
      await finished;
    };
    const res = await open();
    await new Promise<void>((resolve) => res.once('data', () => resolve()));
    res.destroy();
    await finished;
    expect(state.closed).toBe(true);
    expect(state.pulled).toBeLessThan(1_000_000);
  });
});
