/**
 * Published invariant expressions that say something other than their own human text, or that only
 * work when an empty result counts as "holds". The reference validator (HL7's, inside HAPI) evaluates
 * these corrected texts instead, and counts an empty result as a failure (as FHIRPath's boolean
 * conversion of an empty collection does); this server does the same so that both judge a resource
 * alike. Keyed by the exact published text, so a later, fixed publication is evaluated as written.
 */
/** The one value set a corrected expression asks `memberOf` about (invariants.ts answers it). */
export const RESOURCE_TYPES_VALUE_SET = 'http://hl7.org/fhir/ValueSet/resource-types';

export const CORRECTED_EXPRESSIONS: ReadonlyMap<string, string> = new Map([
  // que-12 (R4): the human text says "more than one enableWhen", the expression said more than two.
  [
    'enableWhen.count() > 2 implies enableBehavior.exists()',
    'enableWhen.count() >= 2 implies enableBehavior.exists()',
  ],
  // ras-2 (R4, STU3): without a probability the `implies` has an empty left side.
  [
    'probability is decimal implies (probability as decimal) <= 100',
    '(probability.exists() and (probability is decimal)) implies ((probability as decimal) <= 100)',
  ],
  [
    'probability is decimal implies probability.as(decimal) <= 100',
    'probability.empty() or (probability is decimal implies probability.as(decimal) <= 100)',
  ],
  // ref-1 (R4, STU3): a Reference without `reference` (display only) or pointing at its container (`#`).
  [
    "reference.startsWith('#').not() or (reference.substring(1).trace('url') in %rootResource.contained.id.trace('ids'))",
    "reference.exists() implies (reference = '#' or (reference.startsWith('#').not() or (reference.substring(1).trace('url') in %rootResource.contained.id.trace('ids'))))",
  ],
  [
    "reference.startsWith('#').not() or (reference.substring(1).trace('url') in %resource.contained.id.trace('ids'))",
    "reference.exists() implies (reference = '#' or (reference.startsWith('#').not() or (reference.substring(1).trace('url') in %rootResource.contained.id.trace('ids'))))",
  ],
  // opd-3 (R4): a parameter typed by a resource type may name target profiles too, as R5 allows; the
  // R4 text was a publication error (the reference validator evaluates this form for R4 and R4B).
  [
    "targetProfile.exists() implies (type = 'Reference' or type = 'canonical')",
    `targetProfile.exists() implies (type = 'Reference' or type = 'canonical' or type.memberOf('${RESOURCE_TYPES_VALUE_SET}'))`,
  ],
  // bdl-8 (R4, STU3): an entry without fullUrl has nothing to check.
  ["fullUrl.contains('/_history/').not()", "fullUrl.exists() implies fullUrl.contains('/_history/').not()"],
  // STU3 expressions that use an element as a boolean where its existence is meant.
  [
    "(code or value.empty()) and (system.empty() or system = 'urn:iso:std:iso:4217')",
    "(code.exists() or value.empty()) and (system.empty() or system = 'urn:iso:std:iso:4217')",
  ],
  [
    '(code or value.empty()) and (system.empty() or system = %ucum) and (value.empty() or value > 0)',
    '(code.exists() or value.empty()) and (system.empty() or system = %ucum) and (value.empty() or value > 0)',
  ],
  [
    'element.all(definition and min and max)',
    'element.all(definition.exists() and min.exists() and max.exists())',
  ],
  ["searchType implies type = 'string'", "searchType.exists() implies type = 'string'"],
  [
    "abatement.empty() or (abatement as boolean).not()  or clinicalStatus='resolved' or clinicalStatus='remission' or clinicalStatus='inactive'",
    "abatement.empty() or (abatement is boolean).not() or (abatement as boolean).not() or (clinicalStatus = 'resolved') or (clinicalStatus = 'remission') or (clinicalStatus = 'inactive')",
  ],
]);

/** The expression the reference evaluates for a published one. */
export function correctedExpression(expression: string): string {
  return CORRECTED_EXPRESSIONS.get(expression) ?? expression;
}
