import { Body, Controller, Get, Header, HttpCode, Post, Query, Req, Res } from '@nestjs/common';
import { ApiExcludeEndpoint, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { MemberLaunchService } from './member-launch.service';
import { MemberSessionService } from './member-session.service';
import { STYLESHEET } from './pages';

type Params = Record<string, unknown>;

/**
 * The health plan's auth application for SMART apps (SMART App Launch 2.2 standalone launch):
 * browser pages, server-rendered. Thin: each route calls one service method.
 */
@ApiTags('smart-app-launch')
@Controller('oauth2')
export class MemberLaunchController {
  constructor(
    private readonly launch: MemberLaunchService,
    private readonly sessions: MemberSessionService,
  ) {}

  @Get('authorize')
  @ApiOperation({
    summary: 'SMART App Launch authorize (browser): validates the request, then member sign-in and consent',
    description:
      'response_type=code, client_id, redirect_uri (registered, exact), scope, state, aud (this server’s FHIR base), ' +
      'code_challenge + code_challenge_method=S256 (public apps). Unknown client or redirect URI: an error page; ' +
      'other errors are redirected back with error, error_description, state (RFC 6749 §4.1.2.1).',
  })
  authorizeGet(@Query() query: Params, @Req() req: Request, @Res() res: Response) {
    return this.launch.authorize(query ?? {}, req, res);
  }

  @Post('authorize')
  @ApiOperation({ summary: 'SMART App Launch authorize, form-encoded POST (capability authorize-post)' })
  authorizePost(@Body() body: Params, @Req() req: Request, @Res() res: Response) {
    return this.launch.authorize(body ?? {}, req, res);
  }

  @Get('member/sign-in')
  @ApiOperation({
    summary: 'Member sign-in page (?tx= from authorize, or ?plan=<customer> for connected apps)',
  })
  signInForm(@Query() query: Params, @Req() req: Request, @Res() res: Response) {
    return this.launch.signInForm(query ?? {}, req, res);
  }

  @Post('member/sign-in')
  @ApiOperation({ summary: 'Member sign-in form (tx, csrf, username, password)' })
  signIn(@Body() body: Params, @Req() req: Request, @Res() res: Response) {
    return this.launch.signInSubmit(body ?? {}, req, res);
  }

  @Get('member/consent')
  @ApiOperation({ summary: 'Consent page: what the app asks for, in plain words; the patient record' })
  consentForm(@Query() query: Params, @Req() req: Request, @Res() res: Response) {
    return this.launch.consentForm(query ?? {}, req, res);
  }

  @Post('member/consent')
  @ApiOperation({
    summary: 'Consent decision (tx, csrf, scope…, patient, decision=approve|deny): redirects to the app',
  })
  consent(@Body() body: Params, @Req() req: Request, @Res() res: Response) {
    return this.launch.consentSubmit(body ?? {}, req, res);
  }

  @Get('member/apps')
  @ApiOperation({ summary: "The member's connected apps" })
  apps(@Req() req: Request, @Res() res: Response) {
    return this.launch.connectedApps(req, res);
  }

  @Post('member/apps/revoke')
  @ApiOperation({
    summary: "Revoke an app's grant (csrf, grant): its tokens and refresh tokens stop at once",
  })
  revoke(@Body() body: Params, @Req() req: Request, @Res() res: Response) {
    return this.launch.revokeGrant(body ?? {}, req, res);
  }

  @Post('member/sign-out')
  @HttpCode(303)
  @ApiOperation({ summary: 'Ends the member session on this browser' })
  async signOut(@Req() req: Request, @Res() res: Response) {
    await this.sessions.signOut(req, res);
    res.redirect(303, '/oauth2/member/apps');
  }

  @Get('member/style.css')
  @ApiExcludeEndpoint()
  @Header('Content-Type', 'text/css; charset=utf-8')
  @Header('Cache-Control', 'public, max-age=3600')
  style() {
    return STYLESHEET;
  }
}
