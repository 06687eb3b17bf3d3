import { OperationOutcomeError } from '@app/fhir';
import { BearerCredential } from './bearer-credential';
import type { AccessTokenClaims, IdentityLookup } from './identity-lookup';

/** An identity side that knows one token per client, and which clients and families are gone. */
function identity(
  tokens: Record<string, AccessTokenClaims>,
  gone: { clients?: string[]; families?: string[] } = {},
) {
  return {
    verifyAccessToken: (token: string) => tokens[token] ?? null,
    findActiveClient: (clientId: string) =>
      Promise.resolve(gone.clients?.includes(clientId) ? null : { clientId, customer: `${clientId}-co` }),
    isFamilyRevoked: (_clientId: string, family: string) =>
      Promise.resolve(!!gone.families?.includes(family)),
  } as unknown as IdentityLookup;
}

async function refusal(
  promise: Promise<unknown>,
): Promise<{ status: number; challenge: string; message: string }> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(OperationOutcomeError);
  const outcome = error as OperationOutcomeError;
  return {
    status: outcome.status,
    challenge: outcome.headers['WWW-Authenticate'],
    message: outcome.message,
  };
}

describe('BearerCredential (passport-http-bearer through @nestjs/passport)', () => {
  const user: AccessTokenClaims = { clientId: 'a', userId: 7, scopes: ['user/*.*'], family: 'f1' };

  it('resolves a valid token to its claims and its client', async () => {
    const bearer = new BearerCredential(identity({ t1: user }));
    await expect(bearer.identify('t1')).resolves.toEqual({
      claims: user,
      client: { clientId: 'a', customer: 'a-co' },
    });
    bearer.onModuleDestroy();
  });

  it('refuses an unknown or expired token, a disabled client and a revoked family with 401 invalid_token', async () => {
    const bearer = new BearerCredential(identity({ t1: user }, {}));
    expect(await refusal(bearer.identify('nope'))).toEqual({
      status: 401,
      challenge: 'Bearer realm="fhir", error="invalid_token"',
      message: 'the access token is invalid or expired',
    });
    bearer.onModuleDestroy();
    const disabled = new BearerCredential(identity({ t1: user }, { clients: ['a'] }));
    expect((await refusal(disabled.identify('t1'))).message).toBe(
      'the client of this token is unknown or disabled',
    );
    disabled.onModuleDestroy();
    const revoked = new BearerCredential(identity({ t1: user }, { families: ['f1'] }));
    expect((await refusal(revoked.identify('t1'))).message).toBe(
      'the access token was revoked (its refresh token was reused)',
    );
    revoked.onModuleDestroy();
  });

  it('two apps in one process each check tokens with their own identity side', async () => {
    const first = new BearerCredential(identity({ t1: user }));
    const second = new BearerCredential(identity({ t2: { ...user, clientId: 'b' } }));
    await expect(first.identify('t1')).resolves.toMatchObject({ client: { clientId: 'a' } });
    expect((await refusal(first.identify('t2'))).status).toBe(401);
    await expect(second.identify('t2')).resolves.toMatchObject({ client: { clientId: 'b' } });
    first.onModuleDestroy();
    second.onModuleDestroy();
  });
});
