import {
  BadRequestException,
  ConflictException,
  Injectable,
  Logger,
  NotFoundException,
} from '@nestjs/common';
import { TtlCache } from '../ttl-cache';
import type { MemberSignInDoc } from '../member-federation/member-sign-in';
import { ClientRecord, Program, PROGRAMS } from './client.schema';
import { checkRedirectUris, webOrigin } from './redirect-uris';
import { ClientsRepository } from './clients.repository';
import { hashGeneratedSecret, isSlowHash, newClientId, newSecret, sha256, verifySecret } from './secret-hash';

export interface NewClient {
  name: string;
  customer?: string;
  programs?: string[];
}

/** A SMART app for the members of the plan whose customer slug is `customer`. */
export interface NewSmartApp extends NewClient {
  customer: string;
  redirectUris: string[];
  /** No secret (browser or device app; PKCE required). */
  public?: boolean;
}

/** The result of `client create` / `rotate-secret`: the only time the plain secret is shown. */
export interface IssuedClientCredentials {
  client_id: string;
  client_secret: string;
  name: string;
  customer: string;
  programs: Program[];
}

/** The result of `client create --redirect-uris`: no secret for a public app. */
export interface IssuedSmartApp extends Omit<IssuedClientCredentials, 'client_secret'> {
  client_secret?: string;
  redirect_uris: string[];
  token_endpoint_auth_method: 'none' | 'client_secret_basic';
}

const CUSTOMER_SLUG = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
/**
 * Verifications are cached for a short time: the client-header credential form is checked on
 * every FHIR request, a legacy scrypt hash costs tens of milliseconds, and a remembered right
 * secret passes a throttled source (ClientAuthenticator). Rotate/disable invalidate this
 * process's cache at once; other processes within this TTL.
 */
const VERIFY_CACHE_TTL_MS = 60_000;
/** How long the SMART apps' CORS origins are trusted before they are read again. */
const APP_ORIGINS_TTL_MS = 10_000;

@Injectable()
export class ClientsService {
  private readonly verified = new TtlCache<ClientRecord | null>(VERIFY_CACHE_TTL_MS);
  private readonly byId = new TtlCache<ClientRecord | null>(VERIFY_CACHE_TTL_MS);
  private readonly origins = new TtlCache<Promise<ReadonlySet<string>>>(APP_ORIGINS_TTL_MS);
  /** Counts invalidations: a verification that saw one begin after it started is not cached. */
  private invalidations = 0;
  private readonly logger = new Logger('Clients');

  constructor(private readonly repo: ClientsRepository) {}

  async create(input: NewClient): Promise<IssuedClientCredentials> {
    const name = input.name?.trim();
    if (!name) throw new BadRequestException('a client needs a name');
    const programs = parsePrograms(input.programs ?? []);
    const customer = input.customer
      ? await this.requireFreeCustomer(input.customer)
      : await this.freeCustomerFrom(name);
    const clientId = newClientId();
    const secret = newSecret();
    await this.repo.insert({
      _id: clientId,
      secret_hash: hashGeneratedSecret(secret),
      name,
      customer,
      programs,
      disabled: false,
      created: new Date(),
    });
    return { client_id: clientId, client_secret: secret, name, customer, programs };
  }

  /**
   * A SMART app of the plan whose customer slug is `input.customer`: its members authorize it. The
   * app's own customer slug (population export path, unused by an app) comes from its name; the
   * output names the plan's customer, as given.
   */
  async createApp(input: NewSmartApp): Promise<IssuedSmartApp> {
    const name = input.name?.trim();
    if (!name) throw new BadRequestException('a client needs a name');
    const programs = parsePrograms(input.programs ?? []);
    if (!programs.includes('patient-access'))
      throw new BadRequestException('a SMART app (--redirect-uris) needs the patient-access program');
    if (!input.customer)
      throw new BadRequestException("a SMART app needs --customer: the plan's customer slug");
    const plan = await this.repo.findByCustomer(input.customer);
    if (!plan || plan.app) throw new NotFoundException(`no plan with customer "${input.customer}"`);
    const redirectUris = this.redirectUris(input.redirectUris);
    const clientId = newClientId();
    const secret = input.public ? undefined : newSecret();
    await this.repo.insert({
      _id: clientId,
      ...(secret ? { secret_hash: hashGeneratedSecret(secret) } : {}),
      name,
      customer: await this.freeCustomerFrom(`${name}-app`),
      programs,
      disabled: false,
      created: new Date(),
      redirect_uris: redirectUris,
      plan: plan.clientId,
    });
    this.origins.delete('');
    return {
      client_id: clientId,
      ...(secret ? { client_secret: secret } : {}),
      name,
      customer: plan.customer,
      programs,
      redirect_uris: redirectUris,
      token_endpoint_auth_method: secret ? 'client_secret_basic' : 'none',
    };
  }

  /** `client set-redirect-uris`: replaces a SMART app's redirect URIs. */
  async setRedirectUris(clientId: string, uris: string[]): Promise<ClientRecord> {
    if (!(await this.repo.setRedirectUris(clientId, this.redirectUris(uris))))
      throw new NotFoundException(`no SMART app ${clientId}`);
    this.invalidate(clientId);
    return stripHash((await this.repo.findWithHash(clientId))!);
  }

  /** `client set-plan-branding`: the name and logo a plan's members see on the sign-in and consent pages. */
  async setBranding(clientId: string, branding: { name?: string; logo?: string }): Promise<ClientRecord> {
    if (!(await this.repo.setBranding(clientId, branding)))
      throw new NotFoundException(`no client ${clientId}`);
    this.invalidate(clientId);
    return stripHash((await this.repo.findWithHash(clientId))!);
  }

  /**
   * The web origins of every enabled SMART app's redirect URIs (CORS for browser apps), cached
   * briefly: registration here refreshes it at once, in other processes within the cache time.
   */
  appOrigins(): Promise<ReadonlySet<string>> {
    const cached = this.origins.get('');
    if (cached) return cached;
    const loading = this.repo
      .appRedirectUris()
      .then((uris) => new Set(uris.map(webOrigin).filter((o): o is string => o !== undefined)));
    this.origins.set('', loading);
    loading.catch(() => this.origins.delete(''));
    return loading;
  }

  private redirectUris(uris: string[]): string[] {
    try {
      return checkRedirectUris(uris);
    } catch (e) {
      throw new BadRequestException((e as Error).message);
    }
  }

  /**
   * The client whose id and secret these are, or null (unknown, wrong secret, disabled). Constant
   * time in the secret; cached per (client_id, SHA-256 of the presented secret).
   */
  async authenticate(clientId: string, secret: string): Promise<ClientRecord | null> {
    if (!clientId || !secret || clientId.length > 200 || secret.length > 500) return null;
    const key = `${clientId}\0${sha256(secret)}`;
    const cached = this.verified.get(key);
    if (cached !== undefined) return cached;
    const invalidationsBefore = this.invalidations;
    const found = await this.repo.findWithHash(clientId);
    const ok = await verifySecret(secret, found?.secretHash);
    if (ok && found?.secretHash && isSlowHash(found.secretHash))
      await this.rewriteAsDigest(clientId, found.secretHash, secret);
    const result = ok && found && !found.disabled ? stripHash(found) : null;
    // a rotate/disable while this verified: its answer held when the hash was read, but must not
    // outlive the invalidation in the cache (the old secret would pass for another minute)
    if (this.invalidations === invalidationsBefore) this.verified.set(key, result);
    return result;
  }

  /**
   * A client secret stored as scrypt (before server-made secrets were stored as a digest), just
   * verified as right: stored again as its digest, so its next verifications cost microseconds. Only
   * while the stored hash is still the one verified: a rotate-secret written meanwhile wins.
   */
  private async rewriteAsDigest(clientId: string, verifiedHash: string, secret: string): Promise<void> {
    if (await this.repo.replaceSecretHash(clientId, verifiedHash, hashGeneratedSecret(secret)))
      this.logger.log(`client ${clientId}: secret hash rewritten from scrypt to a SHA-256 digest`);
  }

  /**
   * The client when this process verified exactly this id and secret as right within the cache
   * time; otherwise null, without verifying (a throttled source cannot spend CPU).
   */
  recentlyVerified(clientId: string, secret: string): ClientRecord | null {
    return this.verified.get(`${clientId}\0${sha256(secret)}`) ?? null;
  }

  /** What `findActive` answers from its cache alone; undefined when it would ask the database. */
  cachedActive(clientId: string): ClientRecord | null | undefined {
    return this.byId.get(clientId);
  }

  /** The enabled client with this id (cached briefly), for bearer tokens; null if gone/disabled. */
  async findActive(clientId: string): Promise<ClientRecord | null> {
    const cached = this.cachedActive(clientId);
    if (cached !== undefined) return cached;
    const found = await this.repo.findWithHash(clientId);
    const result = found && !found.disabled ? stripHash(found) : null;
    this.byId.set(clientId, result);
    return result;
  }

  findByCustomer(customer: string): Promise<ClientRecord | null> {
    return this.repo.findByCustomer(customer);
  }

  list(): Promise<ClientRecord[]> {
    return this.repo.list();
  }

  async rotateSecret(clientId: string): Promise<IssuedClientCredentials> {
    if ((await this.repo.findWithHash(clientId))?.app?.public)
      throw new BadRequestException('a public SMART app has no secret to rotate');
    const secret = newSecret();
    if (!(await this.repo.setSecretHash(clientId, hashGeneratedSecret(secret)))) {
      throw new NotFoundException(`no client ${clientId}`);
    }
    this.invalidate(clientId);
    const client = (await this.repo.findWithHash(clientId))!;
    return {
      client_id: clientId,
      client_secret: secret,
      name: client.name,
      customer: client.customer,
      programs: client.programs,
    };
  }

  async disable(clientId: string): Promise<ClientRecord> {
    if (!(await this.repo.setDisabled(clientId, true))) throw new NotFoundException(`no client ${clientId}`);
    this.invalidate(clientId);
    return stripHash((await this.repo.findWithHash(clientId))!);
  }

  /** How a health plan's members sign in (member-federation/member-sign-in.ts checked the settings). */
  async setMemberSignIn(clientId: string, signIn: MemberSignInDoc): Promise<ClientRecord> {
    if (!(await this.repo.setMemberSignIn(clientId, signIn)))
      throw new NotFoundException(`no client ${clientId}`);
    this.invalidate(clientId);
    return stripHash((await this.repo.findWithHash(clientId))!);
  }

  /** The plan's sign-in settings including the provider's client secret: for the federation only. */
  memberSignInWithSecret(clientId: string): Promise<MemberSignInDoc | null> {
    return this.repo.findMemberSignIn(clientId);
  }

  private invalidate(clientId: string): void {
    this.invalidations += 1;
    this.origins.delete('');
    this.verified.deletePrefix(`${clientId}\0`);
    this.byId.delete(clientId);
  }

  private async requireFreeCustomer(customer: string): Promise<string> {
    if (!CUSTOMER_SLUG.test(customer)) {
      throw new BadRequestException(
        `customer must be a slug of lowercase letters, digits and dashes (got "${customer}")`,
      );
    }
    if (await this.repo.customerTaken(customer)) {
      throw new ConflictException(`customer "${customer}" is used by another client`);
    }
    return customer;
  }

  /** A slug from the name, with a numeric suffix when taken (the unique index is the arbiter). */
  private async freeCustomerFrom(name: string): Promise<string> {
    const base =
      name
        .toLowerCase()
        .replace(/[^a-z0-9]+/g, '-')
        .replace(/^-+|-+$/g, '')
        .slice(0, 50)
        .replace(/-+$/, '') || 'client';
    for (let i = 1; ; i++) {
      const candidate = i === 1 ? base : `${base}-${i}`;
      if (!(await this.repo.customerTaken(candidate))) return candidate;
    }
  }
}

function parsePrograms(programs: string[]): Program[] {
  const cleaned = programs.map((p) => p.trim()).filter(Boolean);
  const unknown = cleaned.filter((p) => !(PROGRAMS as readonly string[]).includes(p));
  if (unknown.length > 0) {
    throw new BadRequestException(`unknown program(s) ${unknown.join(', ')}; known: ${PROGRAMS.join(', ')}`);
  }
  return [...new Set(cleaned)] as Program[];
}

function stripHash(c: ClientRecord & { secretHash?: string }): ClientRecord {
  return {
    clientId: c.clientId,
    name: c.name,
    customer: c.customer,
    programs: c.programs,
    disabled: c.disabled,
    created: c.created,
    memberSignIn: c.memberSignIn,
    ...(c.app ? { app: c.app } : {}),
    ...(c.branding ? { branding: c.branding } : {}),
  };
}
