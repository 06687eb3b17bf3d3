import type { ElementRule, ElementTable } from '../definitions/element-tables';
import type { DefinedFhirVersion } from '../definitions/fhir-version';
import { UCUM, isUcumCode } from '../terminology/external-systems';
import { terminology, UNCHECKED_SYSTEMS, type Terminology } from '../terminology/terminology';
import { unreferencedContained, type InvariantScope } from './hand-coded-invariants';
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
  private readonly terminology: Terminology;
  private readonly invariants: InvariantCompiler;
  private readonly byTable = new WeakMap<ElementTable, readonly CompiledInvariant[]>();
  private readonly byRule = new WeakMap<ElementRule, readonly CompiledInvariant[]>();
  /** External systems met during one top-level validation, reported once each as information. */
  readonly unchecked = new Set<string>();

  constructor(version: DefinedFhirVersion) {
    this.terminology = terminology(version);
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
    if (table.key === 'Coding') this.coding(object, path, issues);
    else if (QUANTITY_TYPES.has(table.key)) this.quantity(object, path, issues);
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
    return constraints.flatMap((c) => this.invariants.compile(c, base) ?? []);
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
    if (typeof system !== 'string' || typeof code !== 'string') return;
    const problem = this.terminology.unknownCode(system, code);
    if (problem) issues.push(errorIssue('code-invalid', `${path}.code`, problem, system));
    else if (UNCHECKED_SYSTEMS.has(system)) this.unchecked.add(system);
  }

  private quantity(quantity: JsonObject, path: string, issues: ValidationIssue[]): void {
    const { system, code } = quantity;
    if (system !== UCUM || typeof code !== 'string' || isUcumCode(code)) return;
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
    const valueSet = this.terminology.valueSet(url);
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
    // The reference accepts a CodeableConcept with text only; a code, when given, must be in the set.
    if (withCode.length === 0) return;
    const system = (c: JsonObject) => (typeof c.system === 'string' ? c.system : undefined);
    if (withCode.some((c) => valueSet.has(system(c), c.code as string))) return;
    const shown = withCode.map((c) => `${system(c) ?? ''}#${String(c.code)}`).join(', ');
    issues.push(
      errorIssue(
        'code-invalid',
        path,
        `None of the codes (${shown}) is in the ${kind} ${url}, and a code from it is required`,
        url,
      ),
    );
  }
}
