import { compile, type Model } from 'fhirpath';
import * as dstu2Model from 'fhirpath/fhir-context/dstu2';
import * as r4Model from 'fhirpath/fhir-context/r4';
import * as stu3Model from 'fhirpath/fhir-context/stu3';
import type { FhirVersion } from '../definitions/fhir-version';
import type { CompiledExpression } from './search-parameter-types';
import { compileSimplePath } from './simple-paths';

/** fhirpath.js ships a model for each of our versions, which lets `Observation.value` find valueQuantity. */
export function fhirpathModel(version: FhirVersion): Model {
  const models = { r4: r4Model, stu3: stu3Model, dstu2: dstu2Model } as const;
  return models[version];
}

/** Splits a FHIRPath union `A | B | (C as X)` at top level (outside parentheses and quotes). */
export function splitUnion(expression: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let quoted = false;
  let start = 0;
  for (let i = 0; i < expression.length; i++) {
    const ch = expression[i];
    if (ch === "'" && expression[i - 1] !== '\\') quoted = !quoted;
    if (quoted) continue;
    if (ch === '(') depth++;
    else if (ch === ')') depth--;
    else if (ch === '|' && depth === 0) {
      parts.push(expression.slice(start, i).trim());
      start = i + 1;
    }
  }
  parts.push(expression.slice(start).trim());
  return parts.filter((part) => part.length > 0);
}

const LEADING_PATH = /^\(*\s*([A-Z][A-Za-z]*)(?:\.([a-z][A-Za-z0-9]*))?/;

/** The type an expression part starts from (`Observation` in `(Observation.value as Quantity)`). */
export function leadingType(part: string): string | undefined {
  return LEADING_PATH.exec(part)?.[1];
}

const RESOLVE_IS = /\.where\(\s*resolve\(\)\s+is\s+([A-Z][A-Za-z]*)\s*\)/;

/**
 * fhirpath.js resolve() is asynchronous and needs a server, so the R4 idiom
 * `X.subject.where(resolve() is Patient)` is rewritten to `X.subject` plus a target-type filter
 * applied to the reference strings (https://hl7.org/fhir/R4/searchparameter.html: resolve() here
 * only selects the referenced type). Returns undefined for other uses of resolve().
 */
export function rewriteResolve(part: string): { expression: string; targetType?: string } | undefined {
  const match = RESOLVE_IS.exec(part);
  const expression = match ? part.replace(RESOLVE_IS, '') : part;
  if (expression.includes('resolve()')) return undefined;
  return { expression, targetType: match?.[1] };
}

/**
 * Compiles one expression part once; the evaluator returns fhirpath ResourceNodes (type-annotated,
 * `resolveInternalTypes: false`) so extraction knows whether a value is a Period or a dateTime. A
 * plain member path is walked directly (simple-paths.ts), giving the same nodes.
 */
export function compileExpression(version: FhirVersion, part: string): CompiledExpression | undefined {
  const rewritten = rewriteResolve(part);
  if (!rewritten) return undefined;
  const model = fhirpathModel(version);
  const evaluator = compile(rewritten.expression, model, { resolveInternalTypes: false });
  const byEngine = (resource: unknown): unknown[] => evaluator(resource) as unknown[];
  const firstElement = LEADING_PATH.exec(rewritten.expression)?.[2];
  return {
    evaluate: compileSimplePath(model, rewritten.expression, byEngine) ?? byEngine,
    byEngine,
    firstElement,
    targetType: rewritten.targetType,
  };
}
