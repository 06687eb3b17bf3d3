import {
  BadRequestException,
  CanActivate,
  Controller,
  createParamDecorator,
  Get,
  Header,
  Injectable,
  Module,
  NotFoundException,
  Post,
  Res,
  Scope,
  UseGuards,
  UseInterceptors,
  type CallHandler,
  type ExecutionContext,
  type INestApplication,
  type NestInterceptor,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { Response } from 'express';
import { of, throwError } from 'rxjs';
import request from 'supertest';
import { FhirAdmission } from '../admission/fhir-admission';
import { AllExceptionsFilter } from '../common/all-exceptions.filter';
import { TenantResolver } from '../tenancy/tenant-resolver';
import { FhirExpressAdapter } from './fhir-express-adapter';
import { FhirIdParam } from './fhir-params';
import { FhirRoute } from './fhir-route.decorator';
import { FhirRouteGuard } from './fhir-route.guard';

@Injectable()
class OtherGuard implements CanActivate {
  canActivate(): boolean {
    return true;
  }
}

@Injectable()
class PassThrough implements NestInterceptor {
  intercept(_context: ExecutionContext, next: CallHandler) {
    return next.handle();
  }
}

const PUBLIC = { tenant: false, admitted: false } as const;

/** A parameter decorator that refuses the request with its own message. */
const Refuses = createParamDecorator((message: string): never => {
  throw new BadRequestException(message);
});

@Controller()
class Routes {
  @Get(':version/Patient/:id/plain')
  @FhirRoute(PUBLIC)
  plain(@FhirIdParam() id: string) {
    return { resourceType: 'Patient', id };
  }

  @Post(':version/Patient/:id/plain')
  @FhirRoute(PUBLIC)
  created(@FhirIdParam() id: string) {
    return { resourceType: 'Patient', id };
  }

  @Get(':version/Patient/:id/throws')
  @FhirRoute(PUBLIC)
  throws() {
    throw new NotFoundException('not here');
  }

  @Get(':version/Patient/:id/rejects')
  @FhirRoute(PUBLIC)
  rejects() {
    return Promise.reject(new Error('the handler failed'));
  }

  @Get(':version/Patient/:id/observable')
  @FhirRoute(PUBLIC)
  observable(@FhirIdParam() id: string) {
    return of({ resourceType: 'Patient', id: 'first' }, { resourceType: 'Patient', id });
  }

  @Get(':version/Patient/:id/observable-error')
  @FhirRoute(PUBLIC)
  observableError() {
    return throwError(() => new NotFoundException('gone'));
  }

  // Nest resolves parameters in its metadata's order (the last parameter's decorator runs first)
  @Get(':version/Patient/:id/two-refusals')
  @FhirRoute(PUBLIC)
  twoRefusals(@Refuses('first') _a: unknown, @Refuses('second') _b: unknown) {
    return { resourceType: 'Patient' };
  }

  @Get(':version/Patient/:id/guarded')
  @FhirRoute(PUBLIC)
  @UseGuards(OtherGuard)
  guarded() {
    return { resourceType: 'Patient' };
  }

  @Get(':version/Patient/:id/intercepted')
  @FhirRoute(PUBLIC)
  @UseInterceptors(PassThrough)
  intercepted() {
    return { resourceType: 'Patient' };
  }

  @Get(':version/Patient/:id/response')
  @FhirRoute(PUBLIC)
  response(@Res() res: Response) {
    res.status(200).json({ resourceType: 'Patient' });
  }

  @Get(':version/Patient/:id/header')
  @FhirRoute(PUBLIC)
  @Header('X-Own', 'yes')
  header() {
    return { resourceType: 'Patient' };
  }
}

@Controller({ scope: Scope.REQUEST })
class PerRequest {
  @Get(':version/Patient/:id/per-request')
  @FhirRoute(PUBLIC)
  read() {
    return { resourceType: 'Patient' };
  }
}

// the public routes here never ask for a tenant or admission: FhirRouteGuard's other dependencies
@Module({
  controllers: [Routes, PerRequest],
  providers: [
    FhirRouteGuard,
    OtherGuard,
    PassThrough,
    { provide: TenantResolver, useValue: {} },
    { provide: FhirAdmission, useValue: {} },
  ],
})
class RoutesModule {}

async function appOf(compiled: boolean): Promise<{ app: INestApplication; adapter: FhirExpressAdapter }> {
  const adapter = new FhirExpressAdapter('http://localhost');
  const app = await NestFactory.create(RoutesModule, adapter, { logger: false });
  app.useGlobalFilters(new AllExceptionsFilter());
  if (compiled) adapter.compileFhirRoutes(app);
  await app.init();
  return { app, adapter };
}

describe('compileFhirRoute: which FHIR routes get a compiled handler, and its answers', () => {
  let compiled: { app: INestApplication; adapter: FhirExpressAdapter };
  let byNest: { app: INestApplication; adapter: FhirExpressAdapter };

  beforeAll(async () => {
    [compiled, byNest] = await Promise.all([appOf(true), appOf(false)]);
  });
  afterAll(async () => {
    await compiled?.app.close();
    await byNest?.app.close();
  });

  it('compiles a route whose only enhancer is FhirRouteGuard; leaves the others to Nest, saying why', () => {
    expect(compiled.adapter.fhirRoutes.compiled.sort()).toEqual(
      [
        'GET /:version/Patient/:id/observable',
        'GET /:version/Patient/:id/observable-error',
        'GET /:version/Patient/:id/plain',
        'GET /:version/Patient/:id/rejects',
        'GET /:version/Patient/:id/throws',
        'GET /:version/Patient/:id/two-refusals',
        'POST /:version/Patient/:id/plain',
      ].sort(),
    );
    const reasons = Object.fromEntries(compiled.adapter.fhirRoutes.byNest.map((r) => [r.path, r.reason]));
    expect(reasons).toEqual({
      'GET /:version/Patient/:id/guarded': 'guards other than FhirRouteGuard',
      'GET /:version/Patient/:id/intercepted': 'interceptors',
      'GET /:version/Patient/:id/response': 'parameter RESPONSE',
      'GET /:version/Patient/:id/header': 'response headers',
      'GET /:version/Patient/:id/per-request': 'request-scoped controller',
    });
    expect(byNest.adapter.fhirRoutes).toEqual({ compiled: [], byNest: [] });
  });

  it.each([
    ['get', 'plain', 200],
    // the FHIR reply writes the route's status (default 200) over the 201 Nest sets for a POST
    ['post', 'plain', 200],
    ['get', 'throws', 404],
    ['get', 'rejects', 500],
    ['get', 'observable', 200],
    ['get', 'observable-error', 404],
    ['get', 'bad$id/plain', 400],
    ['get', 'two-refusals', 400],
  ] as const)('%s …/%s answers %s, as through Nest’s pipeline', async (method, path, status) => {
    const url = path.includes('/') ? `/r4/Patient/${path}` : `/r4/Patient/p1/${path}`;
    const [a, b] = await Promise.all(
      [compiled, byNest].map(({ app }) => request(app.getHttpServer())[method](url)),
    );
    expect(a.status).toBe(status);
    expect({ status: a.status, body: a.body as unknown, type: a.headers['content-type'] }).toEqual({
      status: b.status,
      body: b.body as unknown,
      type: b.headers['content-type'],
    });
  });

  it('an Observable answers its last value', async () => {
    const res = await request(compiled.app.getHttpServer()).get('/r4/Patient/p7/observable').expect(200);
    expect(res.body).toEqual({ resourceType: 'Patient', id: 'p7' });
  });
});
