import { NestExpressApplication } from '@nestjs/platform-express';
import { Router, type NextFunction, type Request, type Response } from 'express';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import { json, urlencoded } from 'body-parser';
import helmet from 'helmet';
import { Logger } from 'nestjs-pino';
import { ClientConcurrency } from './admission/client-concurrency';
import { earlyRefusal, expressSourceAddress, refuseAheadOf } from './admission/early-refusal';
import { EventLoopTime } from './admission/event-loop-time';
import { KnownCredentials } from './admission/known-credentials';
import { narrativesInSlices } from './admission/narratives-in-slices';
import { ClientAuthenticator } from './modules/auth/rate-limit/client-authenticator';
import { AllExceptionsFilter } from './common/all-exceptions.filter';
import { fhirBodyGuard, verifyUtf8 } from './common/body-hygiene';
import {
  answerParserErrors,
  cacheControl,
  forRequestBodies,
  headerBlocks,
  inOneLayer,
  recordedHeaders,
  urlLengthLimit,
} from './common/response-hygiene';
import { Settings } from './config/settings';
import { corsMiddleware } from './common/cors';
import { ClientsService } from './modules/auth/clients/clients.service';
import { REQUEST_LOGS } from './logging/logging.module';
import type { RequestLogs } from './logging/request-logs';
import { SECURITY } from './tenancy/security-schemes';

function setupSwagger(app: NestExpressApplication, settings: Settings, docs: DocsRouter): void {
  const config = new DocumentBuilder()
    .setTitle('FHIR data service')
    .setDescription(
      'Multi-tenant FHIR server (DSTU2, STU3, R4) with user management, OAuth 2.0, bulk export, purge and a ' +
        'provider directory. Credentials: a bearer token, or the client headers client_id + client_secret + ' +
        'x-service-user-id (or x-app-user-id).',
    )
    .setVersion('1')
    .addServer(settings.urls.base)
    .addBearerAuth({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' }, SECURITY.bearer)
    .addApiKey({ type: 'apiKey', in: 'header', name: 'client_id' }, SECURITY.clientId)
    .addApiKey({ type: 'apiKey', in: 'header', name: 'client_secret' }, SECURITY.clientSecret)
    .addApiKey({ type: 'apiKey', in: 'header', name: 'x-service-user-id' }, SECURITY.serviceUserId)
    .addApiKey({ type: 'apiKey', in: 'header', name: 'x-app-user-id' }, SECURITY.appUserId)
    .build();
  const document = SwaggerModule.createDocument(app, config);
  behindDocsGate(app, docs, () =>
    SwaggerModule.setup('docs', app, document, { jsonDocumentUrl: 'docs-json' }),
  );
}

/** `/docs…` in any case, as Express matches paths (case-insensitive routing). */
function isDocsPath(path: string): boolean {
  return path.length >= 5 && path.slice(0, 5).toLowerCase() === '/docs';
}

type DocsRouter = ReturnType<typeof Router> & { stack: unknown[] };

/**
 * The layers `setup` adds to the app's router (Swagger's ≈ 10 routes and static files), moved into
 * `docs`, a router of their own that only `/docs…` paths enter (docsGate, the last step of the app's
 * middleware layer): Express's router tries each layer in turn, so every request would otherwise be
 * matched against each of them on its way to the app's routes. The moved layers keep their order and
 * see the same paths (the router is entered without a path of its own); a request they pass on
 * continues with the app's next layer.
 */
function behindDocsGate(app: NestExpressApplication, docs: DocsRouter, setup: () => void): void {
  const express = app.getHttpAdapter().getInstance() as { router: { stack: unknown[] } };
  const stack = express.router.stack;
  const before = stack.length;
  setup();
  docs.stack.push(...stack.splice(before));
}

/** Enters `docs` (behindDocsGate) for `/docs…` paths; any other request goes on. */
function docsGate(docs: DocsRouter) {
  return function docsGate(req: Request, res: Response, next: NextFunction) {
    if (isDocsPath(req.path)) return docs(req, res, next);
    next();
  };
}

/** Everything that must be the same for `npm start` and the e2e tests' app. */
export function configureApp(app: NestExpressApplication, settings: Settings): void {
  app.useLogger(app.get(Logger));
  app.disable('x-powered-by');
  const formBody = urlencoded({ limit: settings.bodyLimitBytes, extended: false, verify: verifyUtf8 });
  // First of all, ahead of Express: a throttled caller's flood is refused before logging, routing and body parsing.
  refuseAheadOf(
    app.getHttpServer(),
    earlyRefusal({
      concurrency: app.get(ClientConcurrency),
      credentials: app.get(KnownCredentials),
      sources: app.get(ClientAuthenticator),
      sourceAddress: expressSourceAddress(app.getHttpAdapter().getInstance()),
      formBody,
    }),
  );
  // No content-hash ETags from Express: an ETag on a FHIR route is the resource's W/"versionId"
  // (https://hl7.org/fhir/R4/http.html#versioning), set by the store on resource responses only.
  app.set('etag', false);
  answerParserErrors(app.getHttpServer(), settings.maxUrlLength);
  // 'simple': a query string never becomes nested objects, so `name[$ne]=` stays a literal key.
  app.set('query parser', 'simple');
  // The source address (`req.ip`) counts failed client authentications: behind a proxy, trust it.
  app.set('trust proxy', settings.trustProxy);
  // Swagger UI needs inline styles; the API itself serves JSON only, so a strict CSP elsewhere.
  // helmet's headers, recorded once: with fixed directives they are the same on every answer.
  const strict = recordedHeaders(helmet());
  const docs = recordedHeaders(helmet({ contentSecurityPolicy: false }));
  const clients = app.get(ClientsService);
  const loop = app.get(EventLoopTime);
  const docsRouter = Router() as DocsRouter;
  // every request's middleware, in this order, as one Express layer (inOneLayer)
  app.use(
    inOneLayer<Request, Response>([
      // the request's id, and its log line when the level logs requests
      app.get<RequestLogs>(REQUEST_LOGS),
      urlLengthLimit(settings.maxUrlLength),
      cacheControl,
      headerBlocks((req) => (req.path.startsWith('/docs') ? docs : strict)),
      // CORS: discovery open to any origin; FHIR routes and the token endpoints to the configured
      // origins and the registered SMART apps' redirect-URI origins; user management, auth-code and the
      // member pages never (src/common/cors.ts).
      corsMiddleware(settings.fhirCorsOrigins, () => clients.appOrigins()),
      // the event-loop time of the body's parse and walk is charged to the caller (its cost budget)
      forRequestBodies<Request, Response>([
        loop.timedBodyParser(
          (verify) =>
            json({
              limit: settings.bodyLimitBytes,
              // `application/json+fhir`: the DSTU2 type (https://hl7.org/fhir/DSTU2/http.html#mime-type)
              type: [
                'application/json',
                'application/fhir+json',
                'application/*+json',
                'application/json+fhir',
              ],
              verify,
            }),
          verifyUtf8,
        ),
        formBody,
        loop.timedStep(
          fhirBodyGuard({
            maxResourceBytes: settings.maxResourceBytes,
            maxArrayLength: settings.maxArrayLength,
          }),
        ),
        // long narratives are checked in slices here, never in one piece on the event loop
        narrativesInSlices(loop),
      ]),
      // Swagger's layers, entered by `/docs…` paths only (filled by setupSwagger below)
      docsGate(docsRouter),
    ]),
  );
  app.useGlobalFilters(new AllExceptionsFilter());
  app.enableShutdownHooks();
  setupSwagger(app, settings, docsRouter);
}
