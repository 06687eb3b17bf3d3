import type { ElementRule, ElementTable } from '../definitions/element-tables';
import type { FhirVersion } from '../definitions/fhir-version';
import { UCUM, isUcumCode } from '../terminology/external-systems';
import { DSTU2_VALUE_SETS, type Dstu2ValueSets } from '../terminology/dstu2-value-sets';
import { terminology, UNCHECKED_SYSTEMS, type Terminology } from '../terminology/terminology';
import { checkBundle, checkDocumentDate } from './bundle-rules';
import { checkDefiningUrl } from './canonical-url-rules';
import { checkQuestionnaire } from './questionnaire-rules';
import { checkQuestionnaireResponse } from './questionnaire-response-rules';
import { checkSearchParameter } from './search-parameter-rules';
import { unreferencedContained, type InvariantScope } from './hand-coded-invariants';
import { dstu2BundleIssues } from './dstu2-bundle-invariants';
import { analyseNarrative } from './narrative';
import { InvariantCompiler, type CompiledInvariant } from './invariants';
import { errorIssue, type ValidationIssue } from './validation-issue';

type JsonObject = Record<string, unknown>;

/** Types whose `system`/`code` pair is a UCUM unit when the system says so (qty-3 and friends). */
const QUANTITY_TYPES = new Set([
  'Quantity',
  'Age',
  'Distance',
  'Duration',
  'Count',
  'SimpleQuantity',
  'MoneyQuantity',
]);

/**
 * The checks beyond structure, called by the structural walker on each object and value:
 * invariants, required (and maximum) bindings, codes of FHIR-defined and external code systems,
 * UCUM units. Compiled per table or rule on first use and kept.
 */
export class ContentChecks {
  /**
   * DSTU2 has neither: no terminology package here, and its definitions carry XPath invariants only;
   * its required bindings are checked against the value sets its definitions list (`valueSets`).
   */
  private readonly terminology?: Terminology;
  private readonly valueSets?: Dstu2ValueSets | Terminology;
  private readonly invariants?: InvariantCompiler;
  private readonly byTable = new WeakMap<ElementTable, readonly CompiledInvariant[]>();
  private readonly byRule = new WeakMap<ElementRule, readonly CompiledInvariant[]>();
  /** External systems met during one top-level validation, reported once each as information. */
  readonly unchecked = new Set<string>();

  constructor(private readonly version: FhirVersion) {
    if (version === 'dstu2') {
      this.valueSets = DSTU2_VALUE_SETS;
      return;
    }
    this.terminology = terminology(version);
    this.valueSets = this.terminology;
    this.invariants = new InvariantCompiler(version);
  }

  /** Invariants of an object's own table, then type-specific code checks. */
  object(
    table: ElementTable,
    object: JsonObject,
    path: string,
    issues: ValidationIssue[],
    scope: InvariantScope,
  ): void {
    let compiled = this.byTable.get(table);
    if (!compiled) {
      compiled = this.compileAll(table.constraints, table.key);
      this.byTable.set(table, compiled);
    }
    this.run(compiled, object, path, issues, scope);
    if (table.isResource)
      checkDefiningUrl(this.version, object, path, scope.resource !== scope.rootResource, issues);
    if (table.key === 'Coding') this.coding(object, path, issues);
    else if (QUANTITY_TYPES.has(table.key)) this.quantity(object, path, issues);
    else if (table.key === 'Identifier') checkIdentifier(object, path, issues);
    else if (table.key === 'Attachment') checkAttachmentSize(object, path, issues);
    else if (table.key === 'Bundle') {
      checkBundle(object, path, issues);
      if (this.version !== 'r4') checkDocumentDate(object, path, issues);
      // DSTU2 publishes its Bundle invariants as XPath only: coded in dstu2-bundle-invariants.ts
      if (this.version === 'dstu2') dstu2BundleIssues(object, path, issues);
    }
    // STU3's enableWhen has the same shape, but the reference checks its targets from R4 on only.
    else if (table.key === 'Questionnaire' && this.version === 'r4') checkQuestionnaire(object, path, issues);
    else if (table.key === 'QuestionnaireResponse' && this.version === 'r4')
      checkQuestionnaireResponse(object, path, issues);
    else if (table.key === 'SearchParameter' && this.version !== 'dstu2')
      checkSearchParameter(object, path, issues);
  }

  /**
   * Narrative links to `#x` must land on an element of the div or an id in the resource
   * (https://hl7.org/fhir/R4/narrative.html#id); the parse itself is memoised in narrative.ts.
   */
  narrativeLinks(xhtml: string, path: string, issues: ValidationIssue[], scope: InvariantScope): void {
    const { fragments } = analyseNarrative(xhtml);
    if (fragments.length === 0) return;
    const ids = new Set<string>();
    collectIds(scope.resource, ids, 0);
    for (const fragment of fragments) {
      if (!ids.has(fragment))
        issues.push(
          errorIssue('value', path, `Hyperlink '#${fragment}' in the narrative does not resolve`, 'txt-1'),
        );
    }
  }

  /** Invariants declared on the element itself and its binding, for one occurrence. */
  value(
    rule: ElementRule,
    value: unknown,
    path: string,
    issues: ValidationIssue[],
    scope: InvariantScope,
  ): void {
    if (rule.constraints) {
      let compiled = this.byRule.get(rule);
      if (!compiled) {
        compiled = this.compileAll(rule.constraints, rule.typeCode);
        this.byRule.set(rule, compiled);
      }
      this.run(compiled, value, path, issues, scope);
    }
    if (rule.binding) {
      if (rule.binding.valueSet) this.bound(rule.binding.valueSet, rule.typeCode, value, path, issues, false);
      if (rule.binding.maxValueSet)
        this.bound(rule.binding.maxValueSet, rule.typeCode, value, path, issues, true);
    }
  }

  /**
   * A primitive under a required binding that has only extensions (`_status` without `status`): a
   * required binding means a code SHALL be present (https://hl7.org/fhir/R4/terminologies.html#required);
   * an extension such as data-absent-reason does not stand in for it.
   */
  codeOnlyExtended(
    rule: ElementRule,
    value: unknown,
    extension: unknown,
    path: string,
    issues: ValidationIssue[],
  ): void {
    const url = rule.binding?.valueSet;
    if (!url) return;
    const missing = (at: string) =>
      issues.push(
        errorIssue(
          'code-invalid',
          at,
          `No code provided, and a code is required from the value set ${url}`,
          url,
        ),
      );
    if (!rule.isArray) {
      if (value === undefined || value === null) missing(path);
      return;
    }
    if (!Array.isArray(extension)) return;
    const values = Array.isArray(value) ? value : [];
    extension.forEach((item, i) => {
      if (item !== null && (values[i] === undefined || values[i] === null)) missing(`${path}[${i}]`);
    });
  }

  /** Contained resources need an id, and something in the resource must point at them (dom-3). */
  containedIds(resource: JsonObject, path: string, issues: ValidationIssue[]): void {
    const contained = resource.contained;
    if (!Array.isArray(contained)) return;
    contained.forEach((item, i) => {
      if (typeof item === 'object' && item !== null && (item as JsonObject).id === undefined)
        issues.push(
          errorIssue('required', `${path}.contained[${i}].id`, 'A contained resource must have an id'),
        );
    });
  }

  private compileAll(
    constraints: readonly { key: string; human: string; expression: string }[],
    base: string,
  ) {
    return constraints.flatMap((c) => this.invariants?.compile(c, base) ?? []);
  }

  private run(
    compiled: readonly CompiledInvariant[],
    node: unknown,
    path: string,
    issues: ValidationIssue[],
    scope: InvariantScope,
  ): void {
    for (const invariant of compiled) {
      if (invariant.check(node, scope)) continue;
      let message = `Constraint failed: ${invariant.key}: '${invariant.human}'`;
      if (invariant.key === 'dom-3' && typeof node === 'object' && node !== null) {
        const ids = unreferencedContained(node as JsonObject).map((c) => String(c.id ?? '(no id)'));
        message += ` (unreferenced: ${ids.join(', ')})`;
      }
      issues.push(errorIssue('invariant', path, message, invariant.key));
    }
  }

  private coding(coding: JsonObject, path: string, issues: ValidationIssue[]): void {
    const { system, code } = coding;
    if (typeof system !== 'string' || typeof code !== 'string' || !this.terminology) return;
    const problem = this.terminology.unknownCode(system, code);
    if (problem) issues.push(errorIssue('code-invalid', `${path}.code`, problem, system));
    else if (UNCHECKED_SYSTEMS.has(system)) this.unchecked.add(system);
  }

  private quantity(quantity: JsonObject, path: string, issues: ValidationIssue[]): void {
    const { system, code } = quantity;
    // DSTU2 is checked for structure only (no terminology), UCUM units included.
    if (typeof system !== 'string' || typeof code !== 'string' || !this.terminology) return;
    if (system !== UCUM) {
      // A unit from a FHIR-defined system (v3-orderableDrugForm …) must be one of its codes.
      const problem = this.terminology.unknownCode(system, code);
      if (problem) issues.push(errorIssue('code-invalid', `${path}.code`, problem, system));
      return;
    }
    if (!isUcumCode(code))
      issues.push(errorIssue('code-invalid', `${path}.code`, `'${code}' is not a valid UCUM code`, UCUM));
  }

  private bound(
    url: string,
    typeCode: string,
    value: unknown,
    path: string,
    issues: ValidationIssue[],
    isMaximum: boolean,
  ): void {
    const valueSet = this.valueSets?.valueSet(url);
    if (!valueSet || value === null || value === undefined) return;
    const kind = isMaximum ? 'maximum value set' : 'value set';
    if (typeof value === 'string') {
      if (!valueSet.has(undefined, value))
        issues.push(
          errorIssue(
            'code-invalid',
            path,
            `The value '${value}' is not in the ${kind} ${url}, which is required`,
            url,
          ),
        );
      return;
    }
    if (typeof value !== 'object') return;
    const object = value as JsonObject;
    const codings =
      typeCode === 'CodeableConcept' ? (Array.isArray(object.coding) ? object.coding : []) : [object];
    const withCode = codings.filter(
      (c): c is JsonObject =>
        typeof c === 'object' && c !== null && typeof (c as JsonObject).code === 'string',
    );
    const where = `${kind} ${url}`;
    if (withCode.length === 0) {
      // As the reference: a required binding needs a code; text alone does not say which one.
      if (!isMaximum)
        issues.push(
          errorIssue('code-invalid', path, `No code provided, and a code is required from the ${where}`, url),
        );
      return;
    }
    const system = (c: JsonObject) => (typeof c.system === 'string' ? c.system : undefined);
    // The reference refuses a CodeableConcept that mixes in a coding from a system outside the value
    // set, even when another coding is in it (HAPI 7.6, Terminology_TX_NoValid_1_CC).
    const foreign = withCode.find((c) => system(c) !== undefined && !valueSet.hasSystem(system(c) as string));
    if (!foreign && withCode.some((c) => valueSet.has(system(c), c.code as string))) return;
    const shown = withCode.map((c) => `${system(c) ?? ''}#${String(c.code)}`).join(', ');
    issues.push(
      errorIssue(
        'code-invalid',
        path,
        foreign
          ? `The coding ${system(foreign)}#${String(foreign.code)} is from a system outside the ${where}, which is required`
          : `None of the codes (${shown}) is in the ${where}, and a code from it is required`,
        url,
      ),
    );
  }
}

/** Identifier.system `urn:ietf:rfc:3986` says the value is itself a URI (https://hl7.org/fhir/R4/datatypes.html#Identifier). */
function checkIdentifier(identifier: JsonObject, path: string, issues: ValidationIssue[]): void {
  const { system, value } = identifier;
  if (system !== 'urn:ietf:rfc:3986' || typeof value !== 'string') return;
  if (!/^[A-Za-z][A-Za-z0-9+.-]*:\S+$/.test(value))
    issues.push(
      errorIssue(
        'value',
        `${path}.value`,
        `With system urn:ietf:rfc:3986 the value must be an absolute URI, not '${value}'`,
      ),
    );
}

/**
 * Attachment.size is the number of bytes of the content (https://hl7.org/fhir/R4/datatypes.html#Attachment):
 * with the content inline (`data`, base64), the stated size must be its decoded length.
 */
function checkAttachmentSize(attachment: JsonObject, path: string, issues: ValidationIssue[]): void {
  const { data, size } = attachment;
  if (typeof data !== 'string' || typeof size !== 'number') return;
  const actual = Buffer.from(data, 'base64').length;
  if (actual !== size)
    issues.push(
      errorIssue(
        'value',
        `${path}.size`,
        `Stated Attachment Size ${size} does not match actual attachment size ${actual}`,
      ),
    );
}

function collectIds(value: unknown, into: Set<string>, depth: number): void {
  if (depth > 100 || typeof value !== 'object' || value === null) return;
  if (Array.isArray(value)) {
    for (const item of value) collectIds(item, into, depth + 1);
    return;
  }
  for (const key in value) {
    const child = (value as JsonObject)[key];
    if (key === 'id' && typeof child === 'string') into.add(child);
    else collectIds(child, into, depth + 1);
  }
}
