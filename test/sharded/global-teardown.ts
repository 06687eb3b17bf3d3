import { rmSync } from 'fs';
import type { RunningCluster } from '../support/cluster';
import e2eGlobalTeardown from '../global-teardown';

export default async function globalTeardown(): Promise<void> {
  await e2eGlobalTeardown();
  await ((globalThis as any).__TEST_CLUSTER__ as RunningCluster | undefined)?.stop();
  if (process.env.TEST_CLUSTER_DIR) rmSync(process.env.TEST_CLUSTER_DIR, { recursive: true, force: true });
}
