import { Worker } from 'node:worker_threads';

/** One HTTP request the victim repeats. */
export interface VictimRequest {
  url: string;
  method: 'GET' | 'POST' | 'PATCH';
  headers: Record<string, string>;
  body?: string;
}

/** What the victim's loop saw: each request's latency (ms), the count per status, bytes read. */
export interface VictimStats {
  latencies: number[];
  statuses: Map<number, number>;
  bytes: number;
}

/**
 * The victim's loop, run in a worker thread of its own (plain JavaScript: no loader needed). On the
 * bench's main thread its latency included the bench's own work for the attacker: writing 32
 * connections of 1 MB bodies held that event loop, and the victim's answers waited there, not in
 * the server. One request at a time; after a 429/503 it waits as Retry-After says.
 */
const VICTIM_LOOP = `
const http = require('node:http');
const { parentPort, workerData } = require('node:worker_threads');
const { request, until } = workerData;
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const send = () =>
  new Promise((resolve, reject) => {
    const req = http.request(request.url, { agent, method: request.method, headers: request.headers }, (res) => {
      let bytes = 0;
      res.on('data', (c) => (bytes += c.length));
      res.on('end', () => resolve({ status: res.statusCode, bytes, retryAfter: res.headers['retry-after'] }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(request.body);
  });
(async () => {
  const latencies = [];
  const statuses = {};
  let bytes = 0;
  while (Date.now() < until) {
    const started = performance.now();
    // a kept-alive socket the server closed while it was idle: an HTTP client sends again
    const res = await send().catch((error) => {
      if (error.code !== 'ECONNRESET') throw error;
      return send();
    });
    latencies.push(performance.now() - started);
    statuses[res.status] = (statuses[res.status] || 0) + 1;
    bytes += res.bytes;
    if (res.status === 429 || res.status === 503) {
      const waitMs = Number(res.retryAfter || 1) * 1000;
      await new Promise((r) => setTimeout(r, Math.max(0, Math.min(waitMs, until - Date.now()))));
    }
  }
  agent.destroy();
  parentPort.postMessage({ latencies, statuses, bytes });
})();
`;

/** Repeats `request` until `until` (epoch ms) in a worker thread; resolves with what it saw. */
export function victimLoop(request: VictimRequest, until: number): Promise<VictimStats> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(VICTIM_LOOP, { eval: true, execArgv: [], workerData: { request, until } });
    worker.once(
      'message',
      (result: { latencies: number[]; statuses: Record<string, number>; bytes: number }) =>
        resolve({
          latencies: result.latencies,
          statuses: new Map(Object.entries(result.statuses).map(([s, n]) => [Number(s), n])),
          bytes: result.bytes,
        }),
    );
    worker.once('error', reject);
    worker.once('exit', (code) => {
      if (code !== 0) reject(new Error(`victim loop exited with ${code}`));
    });
  });
}
