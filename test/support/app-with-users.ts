import { createClient, createUser, IDENTITY_TEST_ENV, TestClient, TestUser } from './factories';
import { createTestApp, TestApp } from './test-app';

/** What most e2e specs start from: an app, a client with its users, another client with its own. */
export interface AppWithUsers {
  t: TestApp;
  client: TestClient;
  /** Users of `client`. */
  users: TestUser[];
  other: TestClient;
  /** Users of `other`: the tenant whose data must never show up. */
  strangers: TestUser[];
}

/**
 * The suite setup e2e specs share: `createTestApp(env)` (IDENTITY_TEST_ENV unless given), a
 * client with `users` users and another client with `strangers` users, created concurrently.
 * The caller closes `t` in its afterAll.
 */
export async function createAppWithUsers(
  counts: { users: number; strangers?: number },
  env: Record<string, string> = IDENTITY_TEST_ENV,
): Promise<AppWithUsers> {
  const t = await createTestApp(env);
  const [client, other] = await Promise.all([createClient(t), createClient(t)]);
  const [users, strangers] = await Promise.all([
    Promise.all(Array.from({ length: counts.users }, () => createUser(t, client))),
    Promise.all(Array.from({ length: counts.strangers ?? 0 }, () => createUser(t, other))),
  ]);
  return { t, client, users, other, strangers };
}
