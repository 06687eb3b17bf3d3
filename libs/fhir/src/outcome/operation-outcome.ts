/**
 * OperationOutcome building and the one error type domain code throws on FHIR routes.
 * https://hl7.org/fhir/R4/operationoutcome.html — issue codes from
 * https://hl7.org/fhir/R4/valueset-issue-type.html; one exception filter maps them to HTTP.
 */
export type IssueSeverity = 'fatal' | 'error' | 'warning' | 'information';
export type IssueCode =
  | 'invalid'
  | 'structure'
  | 'required'
  | 'value'
  | 'invariant'
  | 'security'
  | 'login'
  | 'unknown'
  | 'expired'
  | 'forbidden'
  | 'suppressed'
  | 'processing'
  | 'not-supported'
  | 'duplicate'
  | 'multiple-matches'
  | 'not-found'
  | 'deleted'
  | 'too-long'
  | 'code-invalid'
  | 'extension'
  | 'too-costly'
  | 'business-rule'
  | 'conflict'
  | 'transient'
  | 'lock-error'
  | 'no-store'
  | 'exception'
  | 'timeout'
  | 'incomplete'
  | 'throttled'
  | 'informational';

export interface OutcomeIssue {
  severity: IssueSeverity;
  code: IssueCode;
  diagnostics?: string;
  details?: { text: string };
  expression?: string[];
  location?: string[];
  /** `operationoutcome-message-id`: the rule broken (an invariant key, a value set URL …). */
  extension?: { url: string; valueString: string }[];
}

export interface OperationOutcome {
  resourceType: 'OperationOutcome';
  id?: string;
  issue: OutcomeIssue[];
}

export function operationOutcome(issues: OutcomeIssue[], id?: string): OperationOutcome {
  return id
    ? { resourceType: 'OperationOutcome', id, issue: issues }
    : { resourceType: 'OperationOutcome', issue: issues };
}

export function issue(
  code: IssueCode,
  diagnostics: string,
  opts: { severity?: IssueSeverity; path?: string; rule?: string } = {},
): OutcomeIssue {
  const out: OutcomeIssue = {
    severity: opts.severity ?? 'error',
    code,
    diagnostics,
    details: { text: diagnostics },
  };
  if (opts.path) {
    out.expression = [opts.path];
    out.location = [opts.path];
  }
  if (opts.rule) {
    out.extension = [
      { url: 'http://hl7.org/fhir/StructureDefinition/operationoutcome-message-id', valueString: opts.rule },
    ];
  }
  return out;
}

/** Default HTTP status per issue code when the thrower does not give one. */
const STATUS_BY_CODE: Partial<Record<IssueCode, number>> = {
  invalid: 400,
  structure: 400,
  required: 400,
  value: 400,
  invariant: 400,
  'code-invalid': 400,
  extension: 400,
  'too-long': 413,
  security: 403,
  forbidden: 403,
  login: 401,
  expired: 401,
  'not-found': 404,
  deleted: 410,
  'not-supported': 400,
  duplicate: 409,
  conflict: 409,
  'lock-error': 409,
  'business-rule': 422,
  'too-costly': 400,
  processing: 422,
  transient: 503,
  timeout: 504,
  throttled: 429,
  exception: 500,
};

export function statusForIssueCode(code: IssueCode): number {
  return STATUS_BY_CODE[code] ?? 400;
}

/** Thrown by domain code; the FHIR exception filter answers `status` with `outcome`. */
export class OperationOutcomeError extends Error {
  readonly status: number;
  readonly outcome: OperationOutcome;
  /** Extra response headers, e.g. WWW-Authenticate or Retry-After. */
  readonly headers: Record<string, string>;

  constructor(
    code: IssueCode,
    diagnostics: string,
    opts: { status?: number; path?: string; issues?: OutcomeIssue[]; headers?: Record<string, string> } = {},
  ) {
    super(diagnostics);
    this.status = opts.status ?? statusForIssueCode(code);
    this.outcome = operationOutcome(opts.issues ?? [issue(code, diagnostics, { path: opts.path })]);
    this.headers = opts.headers ?? {};
  }

  static notFound(diagnostics: string): OperationOutcomeError {
    return new OperationOutcomeError('not-found', diagnostics, { status: 404 });
  }

  static invalid(diagnostics: string, path?: string): OperationOutcomeError {
    return new OperationOutcomeError('invalid', diagnostics, { status: 400, path });
  }
}
