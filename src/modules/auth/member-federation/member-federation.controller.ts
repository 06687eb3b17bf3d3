import { Controller, Get, Inject, Query, Req, Res } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { SETTINGS } from '../../../config/config.module';
import { Settings } from '../../../config/settings';
import { ClientsService } from '../clients/clients.service';
import { redirectWith } from '../member-launch/authorize-request';
import { LaunchRepository } from '../member-launch/launch.repository';
import { MemberSessionService } from '../member-launch/member-session.service';
import { errorPage } from '../member-launch/pages';
import { cookie, pageHeaders, setCookie } from '../member-launch/web';
import {
  FederatedFailure,
  MemberFederationService,
  newBrowserBinding,
  NotFederatedError,
} from './member-federation.service';
import { ProviderUnavailableError } from './provider-clients';

/** Ties a federated login to the browser that started it (HttpOnly; Lax: the provider's redirect back is a top-level GET). */
const BINDING_COOKIE = 'member_federation';
const BINDING_SECONDS = 10 * 60;

type Params = Record<string, unknown>;

function str(params: Params, name: string): string | undefined {
  const v = params[name];
  return typeof v === 'string' && v !== '' && v.length <= 200 ? v : undefined;
}

/**
 * Federated member sign-in pages: the sign-in page's "Sign in with <plan>" link starts here; the
 * plan's OpenID provider sends the member back to the callback, which ends, like the built-in
 * form, in MemberSessionService.signIn (member session, then consent). Failures with a known
 * authorization transaction go back to the app as RFC 6749 §4.1.2.1 errors; others are a page.
 */
@ApiTags('smart-app-launch')
@Controller('oauth2/member/federated')
export class MemberFederationController {
  constructor(
    @Inject(SETTINGS) private readonly settings: Settings,
    private readonly federation: MemberFederationService,
    private readonly sessions: MemberSessionService,
    private readonly launches: LaunchRepository,
    private readonly clients: ClientsService,
  ) {}

  @Get('start')
  @ApiOperation({
    summary:
      "Federated member sign-in: to the plan's OpenID provider (?tx= from authorize, or ?plan=<customer>)",
  })
  async start(@Query() query: Params, @Req() req: Request, @Res() res: Response): Promise<void> {
    const txId = str(query, 'tx');
    let plan: string | undefined;
    if (txId) plan = (await this.launches.findTransaction(txId))?.plan;
    else {
      const customer = str(query, 'plan');
      const found = customer ? await this.clients.findByCustomer(customer) : null;
      if (found && !found.disabled) plan = found.clientId;
    }
    if (!plan) return this.page(res, 400, 'This sign-in link has expired. Start again from the app.');
    const binding = cookie(req, BINDING_COOKIE) ?? newBrowserBinding();
    try {
      const { url } = await this.federation.begin(plan, txId, binding);
      setCookie(res, BINDING_COOKIE, binding, this.sessions.secureCookies, BINDING_SECONDS);
      res.redirect(303, url);
    } catch (e) {
      if (e instanceof NotFederatedError)
        return this.page(res, 400, 'This health plan signs its members in here.');
      if (!(e instanceof ProviderUnavailableError)) throw e;
      return this.fail(res, {
        ok: false,
        tx: txId,
        error: 'temporarily_unavailable',
        description: "the plan's sign-in service cannot be reached",
      });
    }
  }

  @Get('callback')
  @ApiOperation({
    summary: "Federated member sign-in: the plan's OpenID provider's redirect back (code, state)",
  })
  async callback(@Query() query: Params, @Req() req: Request, @Res() res: Response): Promise<void> {
    const result = await this.federation.finish(query ?? {}, cookie(req, BINDING_COOKIE));
    if (!result.ok) return this.fail(res, result);
    await this.sessions.signIn(res, { planClientId: result.planClientId, userId: result.userId }, result.tx);
  }

  /** Back to the app with the error when the transaction is known and still open; otherwise a page. */
  private async fail(res: Response, failure: FederatedFailure): Promise<void> {
    const tx = failure.tx ? await this.launches.takeTransaction(failure.tx) : null;
    if (!tx) {
      const status = failure.error === 'temporarily_unavailable' ? 503 : 400;
      return this.page(res, status, `Sign-in did not complete: ${failure.description}.`);
    }
    res.redirect(
      302,
      redirectWith(tx.redirect_uri, {
        error: failure.error,
        error_description: failure.description,
        state: tx.state,
      }),
    );
  }

  private page(res: Response, status: number, message: string): void {
    pageHeaders(res);
    res.status(status).send(errorPage(message));
  }
}
