import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'http';
import type { AddressInfo } from 'net';
import { Writable } from 'stream';
import { storage } from 'nestjs-pino/storage';
import pino from 'pino';
import { requestLogs } from './request-logs';

/** A root logger writing its lines into `lines` (parsed), with the given redaction. */
function capturingLogger(
  lines: Array<Record<string, any>>,
  redact?: pino.LoggerOptions['redact'],
): pino.Logger {
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line) lines.push(JSON.parse(line));
      done();
    },
  });
  return pino({ level: 'info', redact }, sink);
}

/** A real HTTP server running the middleware, then `handler`. */
async function serve(
  middleware: ReturnType<typeof requestLogs>,
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => middleware(req, res, () => handler(req, res)));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 20));

describe('requestLogs', () => {
  let server: Server | undefined;
  afterEach(async () => {
    await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
    server = undefined;
  });

  it('writes one line per answered request with the id, method, path without query, status and time', async () => {
    const lines: Array<Record<string, any>> = [];
    const served = await serve(requestLogs(capturingLogger(lines)), (_req, res) => res.end('ok'));
    server = served.server;
    const answer = await fetch(`${served.url}/r4/Patient/1?name=secret`, {
      headers: { 'x-request-id': 'abc-1' },
    });
    expect(answer.headers.get('x-request-id')).toBe('abc-1');
    await settle();
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: 30,
      reqId: 'abc-1',
      req: { id: 'abc-1', method: 'GET', path: '/r4/Patient/1' },
      res: { statusCode: 200 },
      msg: 'request completed',
    });
    expect(typeof lines[0].responseTime).toBe('number');
    expect(JSON.stringify(lines[0])).not.toContain('secret');
  });

  it('a 5xx is logged at error with the error the exception filter left, or one naming the status', async () => {
    const lines: Array<Record<string, any>> = [];
    const served = await serve(requestLogs(capturingLogger(lines)), (req, res) => {
      if (req.url === '/filtered')
        Object.assign(res, { err: { type: 'MongoServerSelectionError', detail: 'down' } });
      res.statusCode = 503;
      res.end();
    });
    server = served.server;
    await fetch(`${served.url}/filtered`);
    await fetch(`${served.url}/plain`);
    await settle();
    expect(lines.map((line) => [line.level, line.msg, line.res.statusCode])).toEqual([
      [50, 'request errored', 503],
      [50, 'request errored', 503],
    ]);
    expect(lines[0].err).toEqual({ type: 'MongoServerSelectionError', detail: 'down' });
    expect(lines[1].err.message).toBe('failed with status code 503');
  });

  it("writes an errored request's line through the root's redaction, a completed one with the same fields", async () => {
    const lines: Array<Record<string, any>> = [];
    const root = capturingLogger(lines, { paths: ['*.client_secret', '*.method'], censor: '[redacted]' });
    const served = await serve(requestLogs(root), (req, res) => {
      if (req.url === '/failed') Object.assign(res, { err: { client_secret: 'hunter2' } });
      res.statusCode = req.url === '/failed' ? 500 : 200;
      res.end();
    });
    server = served.server;
    await fetch(`${served.url}/failed`, { headers: { 'x-request-id': 'e-1' } });
    await fetch(`${served.url}/fine`, { headers: { 'x-request-id': 'c-1' } });
    await settle();
    expect(lines[0]).toMatchObject({ msg: 'request errored', err: { client_secret: '[redacted]' } });
    expect(lines[0].req.method).toBe('[redacted]');
    // the completed line's fields are fixed and hold no credential: no redaction walk over them
    expect(lines[1]).toMatchObject({
      msg: 'request completed',
      reqId: 'c-1',
      req: { id: 'c-1', method: 'GET', path: '/fine' },
      res: { statusCode: 200 },
    });
  });

  it('redacts the signed token of a bulk export file link from the path', async () => {
    const lines: Array<Record<string, any>> = [];
    const served = await serve(requestLogs(capturingLogger(lines)), (_req, res) => res.end());
    server = served.server;
    await fetch(`${served.url}/bulk-data/r4/$export/Patient/the-signed-token.ndjson`);
    await settle();
    expect(lines[0].req.path).toBe('/bulk-data/r4/$export/Patient/[redacted].ndjson');
  });

  it("what the app logs while serving a request carries the request's id", async () => {
    const lines: Array<Record<string, any>> = [];
    const served = await serve(requestLogs(capturingLogger(lines)), (_req, res) => {
      (storage.getStore()!.logger as pino.Logger).warn('inside');
      res.end();
    });
    server = served.server;
    await fetch(`${served.url}/x`, { headers: { 'x-request-id': 'in-1' } });
    await settle();
    expect(lines.find((line) => line.msg === 'inside')).toMatchObject({ level: 40, reqId: 'in-1' });
  });

  it('without a logger (level silent) only gives the request its id, and no store', async () => {
    let store: unknown = 'unset';
    const served = await serve(requestLogs(undefined), (_req, res) => {
      store = storage.getStore();
      res.end();
    });
    server = served.server;
    const answer = await fetch(`${served.url}/x`, { headers: { 'x-request-id': 'bad id' } });
    expect(answer.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(store).toBeUndefined();
  });
});
