import { rmSync } from 'fs';

export default async function globalTeardown(): Promise<void> {
  const handle = (globalThis as any).__TEST_DB__ as { stop(): Promise<void> } | undefined;
  await handle?.stop();
  if (process.env.TEST_DB_DIR) rmSync(process.env.TEST_DB_DIR, { recursive: true, force: true });
}
