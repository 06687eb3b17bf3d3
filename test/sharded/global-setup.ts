import { chmodSync, mkdtempSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { mongo } from 'mongoose';
import { startCluster } from '../support/cluster';
import { detectShardEngine } from '../../src/storage/shard-engine';
import e2eGlobalSetup from '../global-setup';

/**
 * The sharded run (`npm run test:sharded`, docs/scaling.md): the kit's cluster (1 coordinator + 2
 * workers) under a temporary folder, then the e2e global setup on it as on any MONGO_URL. Each test
 * file's database is sharded by `createTestApp` on the engine detected here.
 */
export default async function globalSetup(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'fhir-cluster-'));
  // Run as root, the cluster runs as the `postgres` OS user, which must reach the folder.
  chmodSync(dir, 0o755);
  const started = Date.now();
  const cluster = await startCluster(join(dir, 'cluster'));
  (globalThis as any).__TEST_CLUSTER__ = cluster;
  process.env.TEST_CLUSTER_DIR = dir;
  const client = await mongo.MongoClient.connect(cluster.uri);
  try {
    process.env.TEST_SHARD_ENGINE = await detectShardEngine(client, 'shard_probe');
  } finally {
    await client.close();
  }
  process.stderr.write(
    `\ncluster: ${process.env.TEST_SHARD_ENGINE} on port ${cluster.port}, started in ${Date.now() - started} ms\n`,
  );
  const saved = process.env.MONGO_URL;
  process.env.MONGO_URL = cluster.uri;
  try {
    await e2eGlobalSetup();
  } finally {
    if (saved === undefined) delete process.env.MONGO_URL;
    else process.env.MONGO_URL = saved;
  }
}
