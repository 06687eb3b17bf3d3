/**
 * The stack's own floor, first half (bench/read.ts): Express alone, as the app creates it
 * (`express()`, one route `GET /:version/:type/:id`, nothing else), with the floor's driver call and
 * reply (bench/lib/read-floor-common.ts). What Express costs per read before any of the app's layers.
 * Run by bench/read.ts in a process of its own; prints `listening <port>`.
 */
import http from 'node:http';
import express from 'express';
import { floorReads, serveFloor, writeRead } from './read-floor-common';

async function main(): Promise<void> {
  const reads = await floorReads();
  const app = express();
  app.get('/:version/:type/:id', (req, res, next) => {
    reads
      .read(req.params.id)
      .then((doc) => writeRead(res, doc))
      .catch(next);
  });
  serveFloor(http.createServer(app), reads);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
