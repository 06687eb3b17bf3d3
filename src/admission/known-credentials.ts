import { hash } from 'crypto';
import { Injectable } from '@nestjs/common';
import type { IncomingMessage } from 'http';

/** Credentials remembered (the oldest go first), and for how long after they were last verified. */
const MAX_CREDENTIALS = 10_000;
const KEEP_MS = 5 * 60_000;
/** A caller remembered this recently is not moved up again: one map update a second, not one a request. */
const REFRESH_MS = 1_000;
/** The digest of a request's credentials, kept on the request: the early refusal and admission both ask. */
const DIGEST = Symbol('credential digest');

/**
 * Which caller (client, and user within it) a request's credentials belong to, for credentials the tenant guard verified
 * recently: a bearer token, or the client headers (`client_id` + `client_secret`). Only digests
 * are kept. Admission's early refusal (early-refusal.ts) uses it to refuse a throttled client
 * before its request is logged, routed or its token verified again; anything not known here takes
 * the normal path.
 */
@Injectable()
export class KnownCredentials {
  private readonly clients = new Map<string, KnownCaller>();

  /** Remembers the caller (client, and user within it) of a request whose credentials were just verified. */
  remember(req: IncomingMessage, clientId: string, user: string): void {
    const key = credentialKey(req);
    if (key === undefined) return;
    const now = Date.now();
    const known = this.clients.get(key);
    if (known && known.clientId === clientId && known.user === user && now - known.at < REFRESH_MS) return;
    this.clients.delete(key);
    this.clients.set(key, { clientId, user, at: now });
    if (this.clients.size > MAX_CREDENTIALS) {
      const oldest = this.clients.keys().next();
      if (!oldest.done) this.clients.delete(oldest.value);
    }
  }

  /** The caller of the request's credentials when they were verified within KEEP_MS. */
  callerOf(req: IncomingMessage): KnownCaller | undefined {
    const key = credentialKey(req);
    if (key === undefined) return undefined;
    const known = this.clients.get(key);
    if (!known) return undefined;
    if (Date.now() - known.at > KEEP_MS) {
      this.clients.delete(key);
      return undefined;
    }
    return known;
  }
}

/** A caller whose credentials were verified: its client, and the user it acts as ('' the client). */
export interface KnownCaller {
  clientId: string;
  user: string;
  at: number;
}

function credentialKey(req: IncomingMessage & { [DIGEST]?: string | null }): string | undefined {
  const kept = req[DIGEST];
  if (kept !== undefined) return kept ?? undefined;
  const key = digestOf(req);
  req[DIGEST] = key ?? null;
  return key;
}

function digestOf(req: IncomingMessage): string | undefined {
  const { authorization } = req.headers;
  const clientId = req.headers.client_id;
  const secret = req.headers.client_secret;
  let credential: string;
  if (typeof authorization === 'string' && authorization.length > 0) credential = `a\n${authorization}`;
  // the client headers name the user of each request: the user is part of the credential
  else if (typeof clientId === 'string' && typeof secret === 'string')
    credential = `c\n${clientId}\n${secret}\n${String(req.headers['x-service-user-id'])}\n${String(req.headers['x-app-user-id'])}`;
  else return undefined;
  // the one-shot digest: no Hash object per request
  return hash('sha256', credential, 'base64url');
}
