import { randomBytes } from 'crypto';
import { Inject, Injectable } from '@nestjs/common';
import type { Request, Response } from 'express';
import { SETTINGS } from '../../../config/config.module';
import { Settings } from '../../../config/settings';
import { UsersService } from '../../users/users.service';
import { sha256, verifySecret } from '../clients/secret-hash';
import { RateLimitService } from '../rate-limit/rate-limit.service';
import { LaunchRepository } from './launch.repository';
import { MemberSessionDoc } from './launch.schemas';
import { clearCookie, cookie, SESSION_COOKIE, setCookie } from './web';

/** How long a member stays signed in on this browser. */
const SESSION_SECONDS = 30 * 60;
/** Longest member id counted by the throttle (a longer one is no member). */
const MAX_KEY_ID = 200;

export type SignInResult = { userId: number } | { wrong: true };

/**
 * Member sessions of the auth pages: the built-in sign-in (the plan's member sign-in secret, with
 * the failure throttle of client secrets) and the one way every sign-in (built-in or federated)
 * ends: `signIn`.
 */
@Injectable()
export class MemberSessionService {
  constructor(
    @Inject(SETTINGS) private readonly settings: Settings,
    private readonly repo: LaunchRepository,
    private readonly users: UsersService,
    private readonly rateLimit: RateLimitService,
  ) {}

  get secureCookies(): boolean {
    return this.settings.urls.auth.startsWith('https:');
  }

  /**
   * Starts the member's session on this browser (cookie) and sends them on: to the consent page
   * of transaction `tx`, or without one to their connected apps. Every sign-in ends here: the
   * built-in form, and federated sign-in at the plan's OpenID provider.
   */
  async signIn(res: Response, member: { planClientId: string; userId: number }, tx?: string): Promise<void> {
    const user = await this.users.findUser(member.planClientId, member.userId);
    if (!user) throw new Error(`no member ${member.userId} of plan ${member.planClientId}`);
    const value = randomBytes(32).toString('base64url');
    await this.repo.insertSession({
      _id: sha256(value),
      plan: member.planClientId,
      u: member.userId,
      app_user_id: user.app_user_id,
      expiresAt: new Date(Date.now() + SESSION_SECONDS * 1000),
    });
    setCookie(res, SESSION_COOKIE, value, this.secureCookies, SESSION_SECONDS);
    if (tx) await this.repo.setTransactionMember(tx, member.userId);
    res.redirect(303, tx ? `/oauth2/member/consent?tx=${encodeURIComponent(tx)}` : '/oauth2/member/apps');
  }

  /** The member signed in on this browser, if any (of `plan` when given: a session of another plan does not count). */
  async current(req: Request, plan?: string): Promise<MemberSessionDoc | null> {
    const value = cookie(req, SESSION_COOKIE);
    if (!value) return null;
    const session = await this.repo.findSession(sha256(value));
    return session && (plan === undefined || session.plan === plan) ? session : null;
  }

  async signOut(req: Request, res: Response): Promise<void> {
    const value = cookie(req, SESSION_COOKIE);
    if (value) await this.repo.deleteSession(sha256(value));
    clearCookie(res, SESSION_COOKIE, this.secureCookies);
  }

  /**
   * Checks a member's id and sign-in secret. Failures are throttled like client secrets, per
   * (plan member, source address) and per source address (RateLimitService.reserveAuthAttempt):
   * throws TooManyRequests (429) when this source spent its attempts; an unknown member or one
   * without a secret costs the same scrypt verification (a decoy hash) as a wrong secret (members'
   * secrets are all scrypt: UsersService.setSignInSecret).
   */
  async checkSecret(
    plan: string,
    username: string,
    password: string,
    address: string,
  ): Promise<SignInResult> {
    const key = `member|${plan}|${username}`.slice(0, MAX_KEY_ID);
    const attempt = await this.rateLimit.reserveAuthAttempt(key, address);
    let found: Awaited<ReturnType<UsersService['findSignIn']>>;
    let ok: boolean;
    try {
      found =
        username.length <= 256 && password.length <= 500 ? await this.users.findSignIn(plan, username) : null;
      ok = await verifySecret(password, found?.signInHash, 'scrypt');
    } catch (error) {
      await attempt.release();
      throw error;
    }
    if (!ok || !found || !found.user.active) {
      attempt.failed();
      return { wrong: true };
    }
    await attempt.release();
    return { userId: found.user.service_user_id };
  }
}
