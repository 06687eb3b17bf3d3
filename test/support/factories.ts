import { randomBytes } from 'crypto';
import request from 'supertest';
import { ClientsService } from '../../src/modules/auth/clients/clients.service';
import type { TestApp } from './test-app';

/** Factories for identity test data, going through the app's real services and routes. */
export interface TestClient {
  client_id: string;
  client_secret: string;
  name: string;
  customer: string;
  programs: string[];
}

export interface TestUser {
  service_user_id: number;
  app_user_id: string;
  access_token: string;
  refresh_token: string;
}

/**
 * A client application created through ClientsService. Tests create many users: give the test
 * app a high USER_MGMT_RATE_LIMIT (see `IDENTITY_TEST_ENV`) unless testing the limit itself.
 */
export async function createClient(
  t: TestApp,
  opts: { name?: string; customer?: string; programs?: string[] } = {},
): Promise<TestClient> {
  const suffix = randomBytes(4).toString('hex');
  return t.app.get(ClientsService).create({
    name: opts.name ?? `test client ${suffix}`,
    customer: opts.customer,
    programs: opts.programs ?? ['patient-access', 'epa', 'provider-access', 'p2p'],
  });
}

/** A new user through POST /user-management/v1/user (with its first access and refresh token). */
export async function createUser(t: TestApp, client: TestClient, appUserId?: string): Promise<TestUser> {
  const res = await request(t.server)
    .post('/user-management/v1/user')
    .send({
      app_user_id: appUserId ?? `user-${randomBytes(6).toString('hex')}`,
      client_id: client.client_id,
      client_secret: client.client_secret,
    });
  if (res.status !== 200 || !res.body.access_token) {
    throw new Error(`createUser failed: ${res.status} ${JSON.stringify(res.body)}`);
  }
  const { service_user_id, app_user_id, access_token, refresh_token } = res.body;
  return { service_user_id, app_user_id, access_token, refresh_token };
}

/** The client-header credential form (docs/api.md §2). */
export function clientHeaders(
  client: TestClient,
  user: number | 'client' | { app_user_id: string },
): Record<string, string> {
  const base = { client_id: client.client_id, client_secret: client.client_secret };
  if (typeof user === 'object') return { ...base, 'x-app-user-id': user.app_user_id };
  return { ...base, 'x-service-user-id': String(user) };
}

export function bearer(token: string): Record<string, string> {
  return { Authorization: `Bearer ${token}` };
}

/** A client-level token from a program realm (client_credentials, docs/api.md §4). */
export async function clientToken(
  t: TestApp,
  client: TestClient,
  opts: { realm?: 'epa-uat' | 'epa-prod' | 'dev-portal'; scope?: string } = {},
): Promise<string> {
  const form: Record<string, string> = {
    grant_type: 'client_credentials',
    client_id: client.client_id,
    client_secret: client.client_secret,
  };
  if (opts.scope) form.scope = opts.scope;
  const res = await request(t.server)
    .post(`/auth/realms/${opts.realm ?? 'epa-uat'}/protocol/openid-connect/token`)
    .type('form')
    .send(form);
  if (res.status !== 200) throw new Error(`clientToken failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.access_token as string;
}

/** Settings for test apps that create many users (the default limit is 300 calls per hour). */
export const IDENTITY_TEST_ENV: Record<string, string> = {
  USER_MGMT_RATE_LIMIT: '1000000',
  TOKEN_FAILURE_LIMIT: '1000000',
};
