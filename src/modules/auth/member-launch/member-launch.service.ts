import { randomBytes, randomUUID } from 'crypto';
import { Inject, Injectable } from '@nestjs/common';
import type { Request, Response } from 'express';
import type { FhirVersion } from '@app/fhir';
import { SETTINGS } from '../../../config/config.module';
import { Settings } from '../../../config/settings';
import { StorageService } from '../../../storage/storage-handle';
import { sourceAddress } from '../../../common/source-address';
import { ClientRecord } from '../clients/client.schema';
import { ClientsService } from '../clients/clients.service';
import { TooManyRequests } from '../rate-limit/rate-limit.service';
import { checkAuthorizeRequest, redirectWith } from './authorize-request';
import { LaunchRepository } from './launch.repository';
import { LaunchTransactionDoc } from './launch.schemas';
import { LaunchTokensService } from './launch-tokens.service';
import { MemberSessionService } from './member-session.service';
import { appsPage, consentPage, errorPage, PatientChoice, PlanView, signInPage } from './pages';
import { csrfMatches, csrfToken, formTarget, pageHeaders } from './web';

/** How long a member has to sign in and decide. */
const TRANSACTION_SECONDS = 15 * 60;
/** Patients offered on the consent page (a member's record rarely holds more than a few). */
const MAX_PATIENTS = 20;

type Params = Record<string, unknown>;

function str(params: Params, name: string): string | undefined {
  const v = params[name];
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/**
 * The health plan's auth application (SMART App Launch 2.2 standalone launch): authorize, the
 * member's sign-in, consent and connected apps. Pages are answered here; decisions end in a
 * redirect to the app with a code (or an error), per RFC 6749 §4.1.2.
 */
@Injectable()
export class MemberLaunchService {
  constructor(
    @Inject(SETTINGS) private readonly settings: Settings,
    private readonly repo: LaunchRepository,
    private readonly clients: ClientsService,
    private readonly sessions: MemberSessionService,
    private readonly launchTokens: LaunchTokensService,
    private readonly storage: StorageService,
  ) {}

  /** GET|POST /oauth2/authorize */
  async authorize(params: Params, req: Request, res: Response): Promise<void> {
    const clientId = str(params, 'client_id');
    const app = clientId && clientId.length <= 200 ? await this.clients.findActive(clientId) : null;
    const outcome = checkAuthorizeRequest(params, app, this.settings.urls.base);
    if ('page' in outcome) return this.page(res, 400, errorPage(outcome.page));
    if ('redirect' in outcome) {
      const { uri, error, description, state } = outcome.redirect;
      return res.redirect(302, redirectWith(uri, { error, error_description: description, state }));
    }
    const request = outcome.ok;
    const plan = await this.clients.findActive(request.app.app!.plan);
    if (!plan) {
      return res.redirect(
        302,
        redirectWith(request.redirectUri, {
          error: 'access_denied',
          error_description: 'the health plan of this app is not available',
          state: request.state,
        }),
      );
    }
    const tx = randomBytes(24).toString('base64url');
    await this.repo.insertTransaction({
      _id: tx,
      app: request.app.clientId,
      plan: plan.clientId,
      redirect_uri: request.redirectUri,
      state: request.state,
      scopes: request.scopes,
      version: request.version,
      code_challenge: request.codeChallenge,
      nonce: request.nonce,
      expiresAt: new Date(Date.now() + TRANSACTION_SECONDS * 1000),
    });
    const signedIn = await this.sessions.current(req, plan.clientId);
    if (signedIn) await this.repo.setTransactionMember(tx, signedIn.u);
    res.redirect(302, `/oauth2/member/${signedIn ? 'consent' : 'sign-in'}?tx=${encodeURIComponent(tx)}`);
  }

  /** GET /oauth2/member/sign-in?tx= (or ?plan=<customer> to reach the connected-apps page) */
  async signInForm(query: Params, req: Request, res: Response): Promise<void> {
    const found = await this.planOf(query);
    if ('page' in found) return this.page(res, 400, found.page);
    const { plan, tx } = found;
    this.page(
      res,
      200,
      signInPage({
        plan: planView(plan),
        appName: tx?.appName,
        tx: tx?.id,
        csrf: csrfToken(req, res, this.secure),
        federatedStart: federatedStart(plan, tx?.id),
      }),
    );
  }

  /** POST /oauth2/member/sign-in (fields tx, csrf, username, password) */
  async signInSubmit(body: Params, req: Request, res: Response): Promise<void> {
    const found = await this.planOf(body);
    if ('page' in found) return this.page(res, 400, found.page);
    const { plan, tx } = found;
    const again = (status: number, error: string) =>
      this.page(
        res,
        status,
        signInPage({
          plan: planView(plan),
          appName: tx?.appName,
          tx: tx?.id,
          csrf: csrfToken(req, res, this.secure),
          error,
          username: str(body, 'username'),
          federatedStart: federatedStart(plan, tx?.id),
        }),
      );
    if (!csrfMatches(req, body.csrf)) return again(403, 'This form expired. Please sign in again.');
    // a federated plan's members prove who they are at its provider only (no secret set here counts)
    if (plan.memberSignIn.mode === 'federated') return again(400, `Sign in with ${planView(plan).name}.`);
    const username = str(body, 'username');
    const password = str(body, 'password');
    if (!username || !password) return again(400, 'Enter your member ID and password.');
    let result;
    try {
      result = await this.sessions.checkSecret(plan.clientId, username, password, sourceAddress(req));
    } catch (error) {
      if (!(error instanceof TooManyRequests)) throw error;
      res.setHeader('Retry-After', error.headers['Retry-After']);
      return again(429, `Too many failed sign-ins. Try again in ${error.headers['Retry-After']} seconds.`);
    }
    if ('wrong' in result) return again(401, 'The member ID or password is wrong.');
    await this.sessions.signIn(res, { planClientId: plan.clientId, userId: result.userId }, tx?.id);
  }

  /** GET /oauth2/member/consent?tx= */
  async consentForm(query: Params, req: Request, res: Response): Promise<void> {
    const ready = await this.decisionContext(query, req, res);
    if (!ready) return;
    const { tx, plan, app, session } = ready;
    const patients = await this.patientsOf(plan.clientId, session.u, tx.version as FhirVersion);
    this.page(
      res,
      200,
      consentPage({
        plan: planView(plan),
        appName: app.name,
        member: session.app_user_id,
        tx: tx._id,
        csrf: csrfToken(req, res, this.secure),
        scopes: tx.scopes,
        patients,
        asksPatient: tx.scopes.includes('launch/patient') || tx.scopes.some((s) => s.startsWith('patient/')),
      }),
      [formTarget(tx.redirect_uri)],
    );
  }

  /** POST /oauth2/member/consent (fields tx, csrf, scope[], patient, decision) */
  async consentSubmit(body: Params, req: Request, res: Response): Promise<void> {
    if (!csrfMatches(req, body.csrf))
      return this.page(
        res,
        403,
        errorPage('This form expired or did not come from this site. Start again from the app.'),
      );
    const ready = await this.decisionContext(body, req, res);
    if (!ready) return;
    const { plan, session } = ready;
    // one decision per transaction: a second submit (or a replay) finds nothing
    const tx = await this.repo.takeTransaction(ready.tx._id);
    if (!tx)
      return this.page(
        res,
        400,
        errorPage('This request was already decided or has expired. Start again from the app.'),
      );
    const back = (params: Record<string, string | undefined>) =>
      res.redirect(303, redirectWith(tx.redirect_uri, { ...params, state: tx.state }));
    if (str(body, 'decision') !== 'approve') {
      return back({ error: 'access_denied', error_description: 'the member denied the request' });
    }
    const ticked = ([] as unknown[])
      .concat(body.scope ?? [])
      .filter((s): s is string => typeof s === 'string');
    // only what the app asked for can be granted, whatever the form says
    const scopes = tx.scopes.filter((s) => ticked.includes(s));
    if (scopes.length === 0)
      return back({ error: 'access_denied', error_description: 'the member allowed nothing' });
    const patients = await this.patientsOf(plan.clientId, session.u, tx.version as FhirVersion);
    const chosen = str(body, 'patient');
    const patient = chosen
      ? patients.find((p) => p.id === chosen)?.id
      : patients.length === 1
        ? patients[0].id
        : undefined;
    if (chosen && !patient)
      return this.page(res, 400, errorPage('That patient record is not yours.', planView(plan)));
    const grant = {
      _id: randomUUID(),
      plan: plan.clientId,
      u: session.u,
      app_user_id: session.app_user_id,
      app: tx.app,
      scopes,
      ...(patient ? { patient } : {}),
      version: tx.version,
      created: new Date(),
      revoked: false,
    };
    await this.repo.insertGrant(grant);
    const code = await this.launchTokens.issueCode(grant, {
      redirectUri: tx.redirect_uri,
      codeChallenge: tx.code_challenge,
      nonce: tx.nonce,
    });
    back({ code });
  }

  /** GET /oauth2/member/apps */
  async connectedApps(req: Request, res: Response, notice?: string): Promise<void> {
    const session = await this.sessions.current(req);
    if (!session) {
      return this.page(
        res,
        401,
        errorPage('Sign in first: open the sign-in page of your health plan (sign-in?plan=…).'),
      );
    }
    const plan = await this.clients.findActive(session.plan);
    const grants = await this.repo.memberGrants(session.plan, session.u);
    const apps = new Map<string, string>();
    for (const g of grants)
      if (!apps.has(g.app)) apps.set(g.app, (await this.clients.findActive(g.app))?.name ?? 'A removed app');
    this.page(
      res,
      200,
      appsPage({
        plan: planView(plan),
        member: session.app_user_id,
        csrf: csrfToken(req, res, this.secure),
        grants: grants.map((g) => ({
          id: g._id,
          appName: apps.get(g.app)!,
          scopes: g.scopes,
          created: g.created,
        })),
        notice,
      }),
    );
  }

  /** POST /oauth2/member/apps/revoke (fields csrf, grant): the app's tokens stop at once. */
  async revokeGrant(body: Params, req: Request, res: Response): Promise<void> {
    if (!csrfMatches(req, body.csrf))
      return this.page(
        res,
        403,
        errorPage('This form expired or did not come from this site. Reload the page.'),
      );
    const session = await this.sessions.current(req);
    if (!session) return this.page(res, 401, errorPage('Sign in first.'));
    const grant = str(body, 'grant');
    const done = grant ? await this.launchTokens.revoke(grant, { plan: session.plan, u: session.u }) : false;
    await this.connectedApps(
      req,
      res,
      done ? 'The app can no longer use your record.' : 'Nothing to revoke.',
    );
  }

  private get secure(): boolean {
    return this.sessions.secureCookies;
  }

  private page(res: Response, status: number, html: string, formTargets: (string | undefined)[] = []): void {
    pageHeaders(
      res,
      formTargets.filter((t): t is string => t !== undefined),
    );
    res.status(status).send(html);
  }

  /** The transaction (and its plan) a sign-in page is for, or the plan named by `plan=<customer>`. */
  private async planOf(
    params: Params,
  ): Promise<{ plan: ClientRecord; tx?: { id: string; appName: string } } | { page: string }> {
    const txId = str(params, 'tx');
    if (txId) {
      const tx = txId.length <= 100 ? await this.repo.findTransaction(txId) : null;
      if (!tx) return { page: errorPage('This sign-in link has expired. Start again from the app.') };
      const [plan, app] = await Promise.all([
        this.clients.findActive(tx.plan),
        this.clients.findActive(tx.app),
      ]);
      if (!plan || !app) return { page: errorPage('This app or health plan is not available.') };
      return { plan, tx: { id: tx._id, appName: app.name } };
    }
    const customer = str(params, 'plan');
    const plan = customer && customer.length <= 100 ? await this.clients.findByCustomer(customer) : null;
    if (!plan || plan.disabled || plan.app) return { page: errorPage('No such health plan.') };
    return { plan };
  }

  /**
   * The transaction, plan, app and member session a consent page or decision needs; a member of
   * another plan (or nobody) is sent to sign in. Answers the page itself when it returns null.
   */
  private async decisionContext(params: Params, req: Request, res: Response) {
    const txId = str(params, 'tx');
    const tx: LaunchTransactionDoc | null =
      txId && txId.length <= 100 ? await this.repo.findTransaction(txId) : null;
    if (!tx) {
      this.page(
        res,
        400,
        errorPage('This request has expired or was already decided. Start again from the app.'),
      );
      return null;
    }
    const [plan, app] = await Promise.all([
      this.clients.findActive(tx.plan),
      this.clients.findActive(tx.app),
    ]);
    if (!plan || !app) {
      this.page(res, 400, errorPage('This app or health plan is not available.'));
      return null;
    }
    const session = await this.sessions.current(req, tx.plan);
    if (!session || (tx.u !== undefined && tx.u !== session.u)) {
      res.redirect(303, `/oauth2/member/sign-in?tx=${encodeURIComponent(tx._id)}`);
      return null;
    }
    if (tx.u === undefined) await this.repo.setTransactionMember(tx._id, session.u);
    return { tx, plan, app, session };
  }

  /** The member's Patient resources in the plan's tenant, in the version the app launched against. */
  private async patientsOf(plan: string, userId: number, version: FhirVersion): Promise<PatientChoice[]> {
    const ctx = { clientId: plan, userId, scopes: [], form: 'user-token' as const };
    const docs = await this.storage.for(ctx).newestOfType(version, 'Patient', MAX_PATIENTS);
    return docs
      .filter((d) => d.json !== null)
      .map((d) => ({ id: d.id, label: patientLabel(JSON.parse(d.json!) as Record<string, unknown>, d.id) }));
  }
}

/** The federated sign-in link of a plan whose members sign in at its own OpenID provider (member-federation). */
function federatedStart(plan: ClientRecord, tx: string | undefined): string | undefined {
  if (plan.memberSignIn.mode !== 'federated') return undefined;
  const query = tx ? `tx=${encodeURIComponent(tx)}` : `plan=${encodeURIComponent(plan.customer)}`;
  return `/oauth2/member/federated/start?${query}`;
}

function planView(plan: ClientRecord | null): PlanView {
  return { name: plan?.branding?.name ?? plan?.name ?? 'Health plan', logo: plan?.branding?.logo };
}

/** "Jane Doe, born 1970-01-01" from a Patient (any version's HumanName shape). */
function patientLabel(patient: Record<string, unknown>, id: string): string {
  const names = Array.isArray(patient.name) ? (patient.name as Record<string, unknown>[]) : [];
  const name = names[0];
  let text = '';
  if (name) {
    if (typeof name.text === 'string') text = name.text;
    else {
      const given = Array.isArray(name.given)
        ? name.given.filter((g) => typeof g === 'string').join(' ')
        : '';
      const family = Array.isArray(name.family)
        ? name.family.join(' ')
        : typeof name.family === 'string'
          ? name.family
          : '';
      text = `${given} ${family}`.trim();
    }
  }
  const born = typeof patient.birthDate === 'string' ? `, born ${patient.birthDate}` : '';
  return `${text || `Patient ${id}`}${born}`;
}
