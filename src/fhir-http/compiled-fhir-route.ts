import {
  ForbiddenException,
  HttpStatus,
  RequestMethod,
  type ExecutionContext,
  type HttpServer,
  type INestApplicationContext,
} from '@nestjs/common';
import {
  CUSTOM_ROUTE_ARGS_METADATA,
  EXCEPTION_FILTERS_METADATA,
  GUARDS_METADATA,
  HEADERS_METADATA,
  HOST_METADATA,
  HTTP_CODE_METADATA,
  INTERCEPTORS_METADATA,
  METHOD_METADATA,
  PIPES_METADATA,
  REDIRECT_METADATA,
  RENDER_METADATA,
  ROUTE_ARGS_METADATA,
  SSE_METADATA,
  VERSION_METADATA,
} from '@nestjs/common/constants';
import { RouteParamtypes } from '@nestjs/common/enums/route-paramtypes.enum';
import { ApplicationConfig, DiscoveryService, ModulesContainer } from '@nestjs/core';
import { FORBIDDEN_MESSAGE } from '@nestjs/core/guards/constants';
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host';
import type { ExceptionsHandler } from '@nestjs/core/exceptions/exceptions-handler';
import { RouterExceptionFilters } from '@nestjs/core/router/router-exception-filters';
import type { NestContainer } from '@nestjs/core/injector/container';
import type { RequestHandler } from '@nestjs/common/interfaces';
import type { NextFunction, Request, Response } from 'express';
import { isObservable, lastValueFrom } from 'rxjs';
import {
  FHIR_HANDLER,
  type ControllerClass,
  type FhirHandlerSite,
  type RouteHandler,
} from './fhir-route-state';
import { FhirRouteGuard } from './fhir-route.guard';

/** One argument of the handler, taken from the request as Nest would take it. */
type ArgumentOf = (
  req: Request,
  res: Response,
  next: NextFunction,
  context: () => ExecutionContext,
) => unknown;

interface Argument {
  index: number;
  value: ArgumentOf;
}

/**
 * A FHIR route's request handler, compiled once, that runs what Nest's router runs for it: the
 * route guard (FhirRouteGuard: route checks, tenant, admission, SMART scopes, in its order), the
 * status Nest sets, the handler's arguments (the same values from the same decorators), the
 * handler, and the answer through the app's adapter (`reply` → the FHIR reply); any error to the
 * app's exception filters through the same exceptions handler Nest builds for the route.
 * Nest's own pipeline is generic: an async function, an execution context and an async resolver
 * per guard and per parameter, a pipe chain, an interceptor consumer and an async response step on
 * every request, even where none of them has work; a read by id is mostly such steps. This handler
 * runs synchronously while each step answers at once (a cached token, a lane with room) and awaits
 * only the steps that return a promise.
 * Compiled only where that is all Nest would do (`whyNotCompiled`); every other route keeps Nest's.
 */
export function compileFhirRoute(
  nestHandler: RequestHandler,
  app: INestApplicationContext,
  adapter: HttpServer,
): RequestHandler | string {
  const site = Reflect.getMetadata(FHIR_HANDLER, nestHandler) as FhirHandlerSite | undefined;
  if (site === undefined) return 'not a FHIR handler';
  const wrappers = new DiscoveryService(app.get(ModulesContainer))
    .getControllers()
    .filter((wrapper) => wrapper.metatype === site.controller);
  // declared in several modules: which instance a route belongs to is Nest's to know
  if (wrappers.length !== 1) return `controller in ${wrappers.length} modules`;
  // a request-scoped controller (or one that depends on a request-scoped provider) has no instance
  // of its own: Nest builds one per request
  if (!wrappers[0].isDependencyTreeStatic()) return 'request-scoped controller';
  const instance = wrappers[0].instance as Record<string, unknown>;
  const callback = instance[site.method] as RouteHandler;
  const config = app.get(ApplicationConfig);
  const refused = whyNotCompiled(site.controller, callback, config);
  if (refused !== undefined) return refused;
  const args = argumentsOf(site);
  if (typeof args === 'string') return args;
  const guard = app.get(FhirRouteGuard, { strict: false });
  const route = guard.routeOf(callback, site.controller);
  const status = statusOf(callback);
  const exceptions = exceptionsHandler(config, adapter, instance, callback);
  const argc = args.reduce((n, { index }) => Math.max(n, index + 1), 0);
  const controller = site.controller;

  const fail = (error: unknown, req: Request, res: Response, next: NextFunction): void => {
    try {
      exceptions.next(error as Error, new ExecutionContextHost([req, res, next]));
    } catch (e) {
      // where Express puts a handler's rejection
      next(e);
    }
  };
  const answer = (value: unknown, req: Request, res: Response, next: NextFunction): void => {
    if (isObservable(value)) {
      lastValueFrom(value).then(
        (last) => answer(last, req, res, next),
        (e) => fail(e, req, res, next),
      );
      return;
    }
    try {
      const written = adapter.reply(res, value, status);
      if (isThenable(written)) written.then(undefined, (e) => fail(e, req, res, next));
    } catch (e) {
      fail(e, req, res, next);
    }
  };
  const run = (activated: boolean, req: Request, res: Response, next: NextFunction): void => {
    try {
      if (!activated) throw new ForbiddenException(FORBIDDEN_MESSAGE);
      adapter.status(res, status);
      const values = argumentValues(args, argc, req, res, next, controller, callback);
      const result = callback.apply(instance, values as never[]);
      if (isThenable(result)) {
        result.then(
          (value) => answer(value, req, res, next),
          (e) => fail(e, req, res, next),
        );
      } else {
        answer(result, req, res, next);
      }
    } catch (e) {
      fail(e, req, res, next);
    }
  };
  const compiled = function compiledFhirRoute(req: Request, res: Response, next: NextFunction): void {
    let activated: boolean | Promise<boolean>;
    try {
      activated = guard.check(route, req, res);
    } catch (e) {
      fail(e, req, res, next);
      return;
    }
    if (activated instanceof Promise) {
      activated.then(
        (ok) => run(ok, req, res, next),
        (e) => fail(e, req, res, next),
      );
    } else {
      run(activated, req, res, next);
    }
  };
  // Express always passes `next`
  return compiled as RequestHandler;
}

/**
 * Why Nest's pipeline would do more for this handler than the compiled one does (undefined: it
 * would not): any guard besides FhirRouteGuard, an interceptor, a pipe, an exception filter of the
 * controller or handler, request-scoped global enhancers, response headers, a redirect, a template,
 * server-sent events, a host or a version of the route.
 */
function whyNotCompiled(
  controller: ControllerClass,
  callback: RouteHandler,
  config: ApplicationConfig,
): string | undefined {
  const guards = [...own(GUARDS_METADATA, controller), ...own(GUARDS_METADATA, callback)];
  if (guards.length !== 1 || guards[0] !== FhirRouteGuard) return 'guards other than FhirRouteGuard';
  if (config.getGlobalGuards().length > 0 || config.getGlobalRequestGuards().length > 0) {
    return 'global guards';
  }
  for (const [key, name] of ENHANCERS) {
    if (own(key, controller).length > 0 || own(key, callback).length > 0) return name;
  }
  if (
    config.getGlobalInterceptors().length > 0 ||
    config.getGlobalRequestInterceptors().length > 0 ||
    config.getGlobalPipes().length > 0 ||
    config.getGlobalRequestPipes().length > 0 ||
    config.getGlobalRequestFilters().length > 0
  ) {
    return 'global interceptors, pipes or request-scoped filters';
  }
  if (own(HEADERS_METADATA, callback).length > 0) return 'response headers';
  for (const key of [REDIRECT_METADATA, RENDER_METADATA, SSE_METADATA, VERSION_METADATA]) {
    if (Reflect.getMetadata(key, callback) !== undefined) return key;
  }
  if (Reflect.getMetadata(HOST_METADATA, controller) !== undefined) return 'host';
  if (Reflect.getMetadata(VERSION_METADATA, controller) !== undefined) return 'version';
  if (config.getVersioning() !== undefined) return 'versioning';
  return undefined;
}

const ENHANCERS: ReadonlyArray<[string, string]> = [
  [INTERCEPTORS_METADATA, 'interceptors'],
  [PIPES_METADATA, 'pipes'],
  [EXCEPTION_FILTERS_METADATA, 'exception filters'],
];

function own(key: string, target: object): unknown[] {
  return (Reflect.getMetadata(key, target) as unknown[] | undefined) ?? [];
}

/** The kinds of Nest's built-in parameter decorators the compiled handler takes, as Nest does. */
const BUILT_IN: Partial<Record<RouteParamtypes, (data: string | undefined) => ArgumentOf | undefined>> = {
  [RouteParamtypes.REQUEST]: () => (req) => req,
  [RouteParamtypes.BODY]: (data) => (data ? undefined : (req) => req.body as unknown),
  [RouteParamtypes.PARAM]: (data) => (data ? (req) => req.params[data] : (req) => req.params),
  [RouteParamtypes.QUERY]: (data) => (data ? (req) => req.query[data] : (req) => req.query),
  [RouteParamtypes.HEADERS]: (data) => {
    const name = data?.toLowerCase();
    return name ? (req) => req.headers[name] : (req) => req.headers;
  },
};

interface RouteArgument {
  index: number;
  data?: unknown;
  pipes?: unknown[];
  factory?: (data: unknown, context: ExecutionContext) => unknown;
}

/**
 * The handler's arguments, in the order Nest resolves them (its metadata's key order); a string
 * when one is of a kind the compiled handler leaves to Nest (the response object, `next`, a body
 * property, files, pipes).
 */
function argumentsOf(site: FhirHandlerSite): Argument[] | string {
  const metadata = (Reflect.getMetadata(ROUTE_ARGS_METADATA, site.controller, site.method) ?? {}) as Record<
    string,
    RouteArgument
  >;
  const args: Argument[] = [];
  for (const [key, param] of Object.entries(metadata)) {
    if (param.pipes !== undefined && param.pipes.length > 0) return 'parameter pipes';
    if (key.includes(CUSTOM_ROUTE_ARGS_METADATA)) {
      const { factory, data } = param;
      // createParamDecorator's factory, with the execution context Nest would give it
      args.push({
        index: param.index,
        value: factory ? (_req, _res, _next, context) => factory(data, context()) : () => null,
      });
      continue;
    }
    const type = Number(key.split(':')[0]) as RouteParamtypes;
    const value = BUILT_IN[type]?.(param.data as string | undefined);
    if (value === undefined)
      return `parameter ${RouteParamtypes[type] ?? key}${param.data ? ` '${String(param.data)}'` : ''}`;
    args.push({ index: param.index, value });
  }
  return args;
}

/**
 * The values, resolved in order; when several throw, the first one's error (Nest resolves them all
 * and `Promise.all` rejects with the first in that order). One execution context per request,
 * made only when a custom decorator asks for it.
 */
function argumentValues(
  args: Argument[],
  argc: number,
  req: Request,
  res: Response,
  next: NextFunction,
  controller: ControllerClass,
  callback: RouteHandler,
): unknown[] {
  const values: unknown[] = new Array(argc).fill(undefined);
  let host: ExecutionContextHost | undefined;
  const context = (): ExecutionContext =>
    (host ??= new ExecutionContextHost([req, res, next], controller as never, callback));
  let failed = false;
  let error: unknown;
  for (const { index, value } of args) {
    try {
      values[index] = value(req, res, next, context);
    } catch (e) {
      if (!failed) error = e;
      failed = true;
    }
  }
  if (failed) throw error;
  return values;
}

/** The status Nest sets before the handler runs: its `@HttpCode()`, else 201 for POST, else 200. */
function statusOf(callback: RouteHandler): number {
  const code = Reflect.getMetadata(HTTP_CODE_METADATA, callback) as number | undefined;
  if (code !== undefined) return code;
  const method = Reflect.getMetadata(METHOD_METADATA, callback) as RequestMethod | undefined;
  return method === RequestMethod.POST ? HttpStatus.CREATED : HttpStatus.OK;
}

/**
 * The exceptions handler Nest's router builds for a route: the app's global filters (the handler
 * and its controller have none, `whyNotCompiled`), Nest's base filter for what none catches.
 */
function exceptionsHandler(
  config: ApplicationConfig,
  adapter: HttpServer,
  instance: object,
  callback: RouteHandler,
): ExceptionsHandler {
  // the container is only asked for filters declared as classes on the controller or handler
  const filters = new RouterExceptionFilters(undefined as unknown as NestContainer, config, adapter);
  return filters.create(instance, callback as never, undefined);
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    value !== null &&
    (typeof value === 'object' || typeof value === 'function') &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}
