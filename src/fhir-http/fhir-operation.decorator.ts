import { RequestMethod } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA, ROUTE_ARGS_METADATA } from '@nestjs/common/constants';
import { ApiOperation, ApiParam } from '@nestjs/swagger';
import { BASE_PREFIX, type FhirBase } from './fhir-route-state';
import {
  FHIR_OPERATION,
  type FhirOperationDefinition,
  type OperationLevel,
  type OperationMethod,
} from './fhir-operation-definition';
import { defineHandlerSite, FhirRoute } from './fhir-route.decorator';

const PATH_PARAMS: ReadonlyArray<[string, string]> = [
  ['version', 'FHIR version: r4, stu3 or dstu2 (any case)'],
  ['type', 'FHIR resource type'],
  ['id', 'logical id'],
  ['customer', 'the customer of a population-level export'],
];

/** The path of an operation at one level under one base. */
export function operationPath(def: FhirOperationDefinition, level: OperationLevel, base: FhirBase): string {
  const types = def.at?.[level]?.types ?? def.types;
  const type = types?.length === 1 ? types[0] : ':type';
  const prefix = BASE_PREFIX[base];
  const segment = def.segment ?? `$${def.name}`;
  if (level === 'system') return `${prefix}/${segment}`;
  if (level === 'type') return `${prefix}/${type}/${segment}`;
  return `${prefix}/${type}/:id/${segment}`;
}

export function operationMethods(def: FhirOperationDefinition): readonly OperationMethod[] {
  return def.methods ?? (def.affectsState ? ['POST'] : ['GET', 'POST']);
}

const STORE: readonly FhirBase[] = ['store'];

function basesAt(def: FhirOperationDefinition, level: OperationLevel): readonly FhirBase[] {
  return def.at?.[level]?.bases ?? def.bases ?? STORE;
}

function pathsUnder(def: FhirOperationDefinition, base: FhirBase): string[] {
  return def.levels
    .filter((level) => basesAt(def, level).includes(base))
    .map((level) => operationPath(def, level, base));
}

/**
 * Declares a FHIR operation on its handler: the routes of every level, base and method, the FHIR
 * route checks and answer (see FhirRoute), and its entry in the CapabilityStatement (found by the
 * OperationRegistry). One handler serves GET and POST: for the second method a twin handler is
 * defined beside it that shares every other decorator's metadata.
 */
export function FhirOperation(def: FhirOperationDefinition): MethodDecorator {
  return (target: object, key: string | symbol, descriptor: PropertyDescriptor) => {
    const bases = [...new Set(def.levels.flatMap((level) => basesAt(def, level)))];
    const paths = bases.flatMap((base) => pathsUnder(def, base));
    const types = [...new Set(def.levels.flatMap((l) => def.at?.[l]?.types ?? def.types ?? []))];
    const everyType = def.levels.some((l) => (def.at?.[l]?.types ?? def.types) === undefined);
    FhirRoute({
      ...def.route,
      body: def.route?.body ?? 'parameters',
      kind: def.affectsState ? 'write' : 'read',
      types: everyType ? undefined : types,
      bases,
    })(target, key, descriptor);
    ApiOperation({ summary: `${def.segment ?? `$${def.name}`}: ${def.description}` })(
      target,
      key,
      descriptor,
    );
    for (const [name, description] of PATH_PARAMS) {
      if (paths.some((path) => path.includes(`:${name}`)))
        ApiParam({ name, description, required: true })(target, key, descriptor);
    }
    const handler = descriptor.value as (...args: unknown[]) => unknown;
    Reflect.defineMetadata(FHIR_OPERATION, def, handler);
    const [first, ...others] = operationMethods(def);
    Reflect.defineMetadata(PATH_METADATA, paths, handler);
    Reflect.defineMetadata(METHOD_METADATA, RequestMethod[first], handler);
    for (const method of others) defineTwin(target, key, handler, method, paths);
  };
}

/**
 * A second handler for another HTTP method: a function whose metadata falls back on the original
 * (its prototype), so decorators applied after this one reach both; only its path and method are
 * its own. Parameter decorators ran before any method decorator, so their metadata is copied.
 */
function defineTwin(
  target: object,
  key: string | symbol,
  handler: (...args: unknown[]) => unknown,
  method: OperationMethod,
  paths: string[],
): void {
  const twinKey = `${String(key)}$${method.toLowerCase()}`;
  const twin = function (this: unknown, ...args: unknown[]) {
    return handler.apply(this, args);
  };
  Object.setPrototypeOf(twin, handler);
  Object.defineProperty(twin, 'name', { value: twinKey });
  Reflect.defineMetadata(PATH_METADATA, paths, twin);
  Reflect.defineMetadata(METHOD_METADATA, RequestMethod[method], twin);
  Object.defineProperty(target, twinKey, { value: twin, writable: true, configurable: true });
  // its own site: the one it inherits from the original names the original's property
  defineHandlerSite(twin, target, twinKey);
  const ctor = (target as { constructor: object }).constructor;
  const args: unknown = Reflect.getMetadata(ROUTE_ARGS_METADATA, ctor, key);
  if (args) Reflect.defineMetadata(ROUTE_ARGS_METADATA, args, ctor, twinKey);
  const types: unknown = Reflect.getMetadata('design:paramtypes', target, key);
  if (types) Reflect.defineMetadata('design:paramtypes', types, target, twinKey);
}
