import { BadRequestException, ValidationPipe } from '@nestjs/common';
import type { ValidationError } from 'class-validator';

/**
 * Request DTOs of the non-FHIR routes (user management, token endpoints, directory) are checked
 * by Nest's ValidationPipe with class-validator rules on the DTO classes. The pipe is attached
 * per parameter (`@Body(API_BODY)`, `@Body(OAUTH_FORM)`), never globally: FHIR routes answer their
 * own OperationOutcomes and must not see it.
 *
 * Shared options: fields the DTO does not declare are dropped, not refused (the routes ignored
 * them before, and RFC 6749 §3.2 says a token endpoint MUST ignore unrecognized parameters); the
 * first broken rule is the answer (one message, as the hand-written checks gave); the handler
 * receives the DTO instance with its transforms applied.
 */
export function bodyPipe(toError: (problem: string) => Error): ValidationPipe {
  return new ValidationPipe({
    transform: true,
    whitelist: true,
    forbidNonWhitelisted: false,
    stopAtFirstError: true,
    validationError: { target: false, value: false },
    exceptionFactory: (errors) => toError(firstProblem(errors) ?? 'the request body is not valid'),
  });
}

/** The first broken rule's message, with the path of a nested field (`address.city must …`). */
export function firstProblem(errors: ValidationError[], path = ''): string | undefined {
  for (const error of errors) {
    const message = Object.values(error.constraints ?? {})[0];
    if (message) return path ? `${path}.${message}` : message;
    const nested = firstProblem(error.children ?? [], path ? `${path}.${error.property}` : error.property);
    if (nested) return nested;
  }
  return undefined;
}

/** The API's JSON error shape: 400 `{ "error": "bad_request", "message" }` (the global filter). */
export const API_BODY = bodyPipe((problem) => new BadRequestException(problem));
