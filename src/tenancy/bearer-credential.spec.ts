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

describe('BearerCredential.identifyCached (the same checks on what the caches hold)', () => {
  const user: AccessTokenClaims = { clientId: 'a', userId: 7, scopes: ['user/*.*'], family: 'f1' };

  /** Caches that know `t1`, client `a` and family `f1` as given; nothing reaches a lookup. */
  function caches(known: {
    token?: AccessTokenClaims | null;
    client?: { clientId: string } | null;
    revoked?: boolean;
  }) {
    const lookups = jest.fn(() => Promise.reject(new Error('no lookup on the cached path')));
    const lookup = {
      verifyAccessToken: lookups,
      findActiveClient: lookups,
      isFamilyRevoked: lookups,
      cachedAccessToken: (token: string) => (token === 't1' ? known.token : undefined),
      cachedActiveClient: (clientId: string) => (clientId === 'a' ? known.client : undefined),
      cachedFamilyRevoked: (_clientId: string, family: string) =>
        family === 'f1' ? known.revoked : undefined,
    } as unknown as IdentityLookup;
    return { bearer: new BearerCredential(lookup), lookups };
  }

  function refusalOf(run: () => unknown): string {
    try {
      run();
    } catch (e) {
      expect(e).toBeInstanceOf(OperationOutcomeError);
      const outcome = e as OperationOutcomeError;
      expect([outcome.status, outcome.headers['WWW-Authenticate']]).toEqual([
        401,
        'Bearer realm="fhir", error="invalid_token"',
      ]);
      return outcome.message;
    }
    throw new Error('not refused');
  }

  it('answers at once when the token, its client and its family are all cached', () => {
    const { bearer, lookups } = caches({ token: user, client: { clientId: 'a' }, revoked: false });
    expect(bearer.identifyCached('t1')).toEqual({ claims: user, client: { clientId: 'a' } });
    expect(lookups).not.toHaveBeenCalled();
    bearer.onModuleDestroy();
  });

  it('leaves to passport a token, a client or a family the caches do not know', () => {
    const unknownToken = caches({ client: { clientId: 'a' }, revoked: false });
    expect(unknownToken.bearer.identifyCached('t1')).toBeUndefined();
    const unknownClient = caches({ token: user, revoked: false });
    expect(unknownClient.bearer.identifyCached('t1')).toBeUndefined();
    const unknownFamily = caches({ token: user, client: { clientId: 'a' } });
    expect(unknownFamily.bearer.identifyCached('t1')).toBeUndefined();
    for (const { bearer, lookups } of [unknownToken, unknownClient, unknownFamily]) {
      expect(lookups).not.toHaveBeenCalled();
      bearer.onModuleDestroy();
    }
  });

  it('refuses as the strategy does: an expired token, a disabled client, a revoked family', () => {
    const expired = caches({ token: null, client: { clientId: 'a' }, revoked: false });
    expect(refusalOf(() => expired.bearer.identifyCached('t1'))).toBe(
      'the access token is invalid or expired',
    );
    const disabled = caches({ token: user, client: null, revoked: false });
    expect(refusalOf(() => disabled.bearer.identifyCached('t1'))).toBe(
      'the client of this token is unknown or disabled',
    );
    const revoked = caches({ token: user, client: { clientId: 'a' }, revoked: true });
    expect(refusalOf(() => revoked.bearer.identifyCached('t1'))).toBe(
      'the access token was revoked (its refresh token was reused)',
    );
    for (const { bearer } of [expired, disabled, revoked]) bearer.onModuleDestroy();
  });
});
