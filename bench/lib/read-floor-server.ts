/**
 * The floor under `GET /r4/Observation/{id}` (bench/read.ts): Node's own HTTP server and the same
 * driver call the app makes for a read (`findOneByCommand` by key and tenant, without the index
 * entries, with the app's per-operation deadline), answering the stored JSON with the headers a FHIR read
 * carries. No framework, no guard, no admission: what a read costs on this machine before the app's
 * stack adds anything. Run by bench/read.ts in a process of its own (READ_FLOOR_* from its
 * environment); prints `listening <port>` once it accepts requests.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mongo } from 'mongoose';
import { resourceKey } from '../../libs/fhir/src/storage/keys';
import { findOneByCommand } from '../../src/database/point-read';

async function main(): Promise<void> {
  const env = (name: string): string => {
    const value = process.env[name];
    if (!value) throw new Error(`${name} is required`);
    return value;
  };
  const clientId = env('READ_FLOOR_CLIENT');
  const userId = Number(env('READ_FLOOR_USER'));
  const client = await mongo.MongoClient.connect(env('READ_FLOOR_MONGO_URL'), {
    timeoutMS: Number(env('READ_FLOOR_TIMEOUT_MS')),
  });
  const resources = client
    .db(env('READ_FLOOR_DB'))
    .collection<{ _id: string; vid: number; lu: Date; json: string }>('resources');
  const server = http.createServer((req, res) => {
    const id = (req.url ?? '').split('/')[3] ?? '';
    findOneByCommand(
      resources,
      { _id: resourceKey('r4', clientId, 'Observation', id), c: clientId, u: userId },
      { projection: { idx: 0 } },
    )
      .then((doc) => {
        if (!doc) return void res.writeHead(404).end();
        res
          .writeHead(200, {
            'content-type': 'application/fhir+json; charset=utf-8',
            etag: `W/"${doc.vid}"`,
            'last-modified': doc.lu.toUTCString(),
          })
          .end(doc.json);
      })
      .catch(() => res.writeHead(500).end());
  });
  server.listen(0, '127.0.0.1', () => {
    process.stdout.write(`listening ${(server.address() as AddressInfo).port}\n`);
  });
  process.on('SIGTERM', () => {
    server.close();
    void client.close().then(() => process.exit(0));
  });
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
