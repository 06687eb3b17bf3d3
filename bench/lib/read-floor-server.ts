/**
 * The floor under `GET /r4/Observation/{id}` (bench/read.ts): Node's own HTTP server and the same
 * driver call the app makes for a read (bench/lib/read-floor-common.ts: `findOneByCommand` by key and
 * tenant, without the index entries, with the app's per-operation deadline), answering the stored
 * JSON with the headers a FHIR read carries. No framework, no guard, no admission: what a read costs
 * on this machine before the app's stack adds anything; READ_FLOOR_* move it toward the app's process
 * step by step (the ladder). Run by bench/read.ts in a process of its own; prints `listening <port>`
 * once it accepts requests.
 */
import http from 'node:http';
import { floorReads, idOf, serveFloor, writeRead } from './read-floor-common';

async function main(): Promise<void> {
  const reads = await floorReads();
  const server = http.createServer((req, res) => {
    reads
      .read(idOf(req.url))
      .then((doc) => writeRead(res, doc))
      .catch(() => res.writeHead(500).end());
  });
  serveFloor(server, reads);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
