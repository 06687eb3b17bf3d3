import type { FhirVersion } from '../definitions/fhir-version';
import { StructuralValidator } from './structural-validator';
import type { ValidationIssue } from './validation-issue';

const validators = new Map<FhirVersion, StructuralValidator>();

function validatorFor(version: FhirVersion): StructuralValidator {
  let validator = validators.get(version);
  if (!validator) {
    validator = new StructuralValidator(version);
    validators.set(version, validator);
  }
  return validator;
}

/** Builds the version's validator (its definitions and terminology) ahead of the first resource. */
export function prepareValidation(version: FhirVersion): void {
  validatorFor(version);
}

/**
 * Validates a parsed JSON resource against the base definitions of a FHIR version and returns every
 * issue found ([] = valid). With `expectedType` (e.g. the type in the URL) a different resourceType is
 * an issue too. Never throws for any JSON input.
 */
export function validateResource(
  version: FhirVersion,
  resource: unknown,
  expectedType?: string,
): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  validatorFor(version).validate(resource, issues, expectedType);
  return issues;
}

/**
 * The Bundle invariants (bdl-*) a Bundle breaks, judged on its own elements: the resources of its
 * entries are not validated (a transaction or batch validates each as its own write). DSTU2's
 * transaction and batch entries that create without a fullUrl pass bdl-6/bdl-7 (dstu2-bundle-invariants.ts).
 */
export function bundleInvariantIssues(version: FhirVersion, bundle: unknown): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  validatorFor(version).validateEnvelope(bundle, issues);
  return issues.filter((i) => i.severity === 'error' && i.rule?.startsWith('bdl-'));
}

const FHIR_ID = /^[A-Za-z0-9\-.]{1,64}$/;

/** FHIR logical id rule (https://hl7.org/fhir/R4/datatypes.html#id): 1–64 of A–Z a–z 0–9 - . */
export function isValidId(id: string): boolean {
  return FHIR_ID.test(id);
}
