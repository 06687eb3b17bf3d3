import { Injectable } from '@nestjs/common';
import {
  FhirVersion,
  issue,
  isResourceType,
  operationOutcome,
  OperationOutcome,
  OperationOutcomeError,
  OutcomeIssue,
  validateResource,
} from '@app/fhir';
import { timedOnLoop } from '../../../admission/event-loop-time';
import type { TenantContext } from '../../../tenancy/tenant-context';

type ValidateMode = 'create' | 'update' | 'delete';
const MODES: readonly ValidateMode[] = ['create', 'update', 'delete'];

interface ValidateInput {
  resource?: Record<string, unknown>;
  mode?: ValidateMode;
  profile?: string;
}

/**
 * `$validate` (https://hl7.org/fhir/R4/resource-operation-validate.html): checks a resource
 * against the base definitions of the version without storing anything. The answer is always an
 * OperationOutcome with status 200 when the request itself was understood.
 */
@Injectable()
export class ValidateOperationService {
  /** `caller`: charged the validation's event-loop time (admission's timedOnLoop). */
  validate(
    version: FhirVersion,
    type: string,
    body: unknown,
    id?: string,
    caller?: Pick<TenantContext, 'chargeLoopMs'>,
  ): OperationOutcome {
    if (!isResourceType(version, type)) throw OperationOutcomeError.notFound(`unknown resource type ${type}`);
    const input = this.readInput(body);
    const mode = input.mode ?? (id ? 'update' : 'create');
    if (mode === 'delete') {
      // The base spec has no rules that forbid a delete; profiles are not enforced here.
      return operationOutcome([
        issue('informational', 'delete would be allowed', { severity: 'information' }),
      ]);
    }
    if (!input.resource) {
      throw OperationOutcomeError.invalid(
        'a resource is required (the body, or Parameters.parameter "resource")',
      );
    }
    const found = timedOnLoop(caller, () => validateResource(version, input.resource!, type));
    const issues: OutcomeIssue[] = found.map((i) =>
      issue(i.code, i.message, { severity: i.severity, path: i.path, rule: i.rule }),
    );
    if (mode === 'update') {
      if (!input.resource.id)
        issues.push(issue('required', 'an update needs the resource id', { path: `${type}.id` }));
      else if (id && input.resource.id !== id) {
        issues.push(
          issue('invalid', `resource id "${String(input.resource.id)}" differs from the URL id "${id}"`, {
            path: `${type}.id`,
          }),
        );
      }
    }
    if (input.profile) {
      issues.push(
        issue('not-supported', `profile ${input.profile} not checked: only the base specification is`, {
          severity: 'warning',
        }),
      );
    }
    if (!issues.some((i) => i.severity === 'error')) {
      issues.unshift(
        issue('informational', 'the resource is valid against the base specification', {
          severity: 'information',
        }),
      );
    }
    return operationOutcome(issues);
  }

  private readInput(body: unknown): ValidateInput {
    if (body === undefined || body === null || (typeof body === 'object' && Object.keys(body).length === 0))
      return {};
    if (typeof body !== 'object' || Array.isArray(body))
      throw OperationOutcomeError.invalid('the body must be a JSON object');
    const b = body as Record<string, unknown>;
    if (b.resourceType !== 'Parameters') return { resource: b };
    const params = Array.isArray(b.parameter) ? (b.parameter as Record<string, unknown>[]) : [];
    const byName = (n: string) => params.find((p) => p && p.name === n);
    const mode = byName('mode')?.valueCode;
    if (mode !== undefined && !MODES.includes(mode as ValidateMode)) {
      throw OperationOutcomeError.invalid(`mode must be one of ${MODES.join(', ')}`);
    }
    const resource = byName('resource')?.resource;
    if (
      resource !== undefined &&
      (typeof resource !== 'object' || resource === null || Array.isArray(resource))
    ) {
      throw OperationOutcomeError.invalid('parameter "resource" must hold a resource');
    }
    const profile = byName('profile')?.valueUri ?? byName('profile')?.valueCanonical;
    return {
      resource: resource as Record<string, unknown> | undefined,
      mode: mode as ValidateMode | undefined,
      profile: typeof profile === 'string' ? profile : undefined,
    };
  }
}
