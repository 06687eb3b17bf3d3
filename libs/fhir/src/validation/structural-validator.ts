import {
  elementTables,
  type ElementRule,
  type ElementTable,
  type ElementTables,
} from '../definitions/element-tables';
import type { FhirVersion } from '../definitions/fhir-version';
import { isResourceType } from '../definitions/resource-types';
import { ContentChecks } from './content-checks';
import type { InvariantScope } from './hand-coded-invariants';
import { primitiveCheck, type PrimitiveCheck } from './primitive-formats';
import { errorIssue, type ValidationIssue } from './validation-issue';

type JsonObject = Record<string, unknown>;

/**
 * Real resources nest a few dozen levels at most (Questionnaire.item.item …). The limit keeps a crafted,
 * deeply nested body from exhausting the stack, which would surface as a 500 instead of an issue.
 */
export const MAX_DEPTH = 200;

function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function jsonKind(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

/**
 * Structural validation against the base StructureDefinitions of R4, STU3 or DSTU2: unknown
 * elements, JSON types, cardinality, primitive formats, one choice per `[x]` element, nested resources.
 * JSON representation rules: https://hl7.org/fhir/R4/json.html. Every problem is collected.
 */
export class StructuralValidator {
  private readonly tables: ElementTables;
  private readonly primitiveChecks = new Map<string, PrimitiveCheck>();
  private readonly checks: ContentChecks;
  /** Current object nesting; validation is synchronous, so one counter per validator is enough. */
  private depth = 0;
  /** `%resource` / `%rootResource` of the element being walked. */
  private scope: InvariantScope = { resource: {}, rootResource: {} };
  /** Engine time of the current top-level validation. */
  private budget = { spentMs: 0, skipped: 0 };
  /** Set while only a resource's own elements are walked (validateEnvelope): nested resources skipped. */
  private envelopeOnly = false;

  constructor(private readonly version: FhirVersion) {
    this.tables = elementTables(version);
    this.checks = new ContentChecks(version);
  }

  /** Validates a top-level resource: every issue, then one note per code system not checked here. */
  validate(resource: unknown, issues: ValidationIssue[], expectedType?: string): void {
    this.checks.unchecked.clear();
    const budget = { spentMs: 0, skipped: 0 };
    this.budget = budget;
    this.validateResource(resource, issues, undefined, expectedType);
    if (budget.skipped > 0) {
      issues.push({
        severity: 'warning',
        code: 'too-long',
        path: resourceTypeOf(resource) ?? expectedType ?? 'Resource',
        message: `${budget.skipped} invariant evaluations skipped: the resource exceeds the validation time budget`,
      });
    }
    for (const system of this.checks.unchecked) {
      issues.push({
        severity: 'information',
        code: 'informational',
        path: resourceTypeOf(resource) ?? expectedType ?? 'Resource',
        message: `Codes from ${system} were not checked: no terminology server for that system here`,
        rule: system,
      });
    }
  }

  /**
   * A resource's own elements and rules, without walking the resources nested in it (a Bundle's entry
   * resources): for a transaction's envelope, whose entries are each validated as their own write.
   */
  validateEnvelope(resource: unknown, issues: ValidationIssue[]): void {
    this.envelopeOnly = true;
    try {
      this.validate(resource, issues);
    } finally {
      this.envelopeOnly = false;
    }
  }

  /**
   * Validates a resource; `path` is where it sits (undefined for a top-level resource), `container`
   * the resource holding it when it is contained (its `%rootResource`).
   */
  private validateResource(
    resource: unknown,
    issues: ValidationIssue[],
    path?: string,
    expectedType?: string,
    container?: JsonObject,
  ): void {
    const where = path ?? expectedType ?? 'Resource';
    if (!isJsonObject(resource)) {
      issues.push(
        errorIssue('structure', where, `A resource must be a JSON object, found ${jsonKind(resource)}`),
      );
      return;
    }
    const type = resource.resourceType;
    if (type === undefined) {
      issues.push(errorIssue('required', `${where}.resourceType`, 'resourceType is missing'));
      return;
    }
    if (typeof type !== 'string') {
      issues.push(errorIssue('structure', `${where}.resourceType`, 'resourceType must be a string'));
      return;
    }
    const table = isResourceType(this.version, type) ? this.tables.table(type) : undefined;
    if (!table) {
      issues.push(
        errorIssue(
          'not-found',
          `${where}.resourceType`,
          `Unknown resource type '${type}' in ${this.version}`,
        ),
      );
      return;
    }
    if (expectedType !== undefined && type !== expectedType) {
      issues.push(
        errorIssue(
          'invalid',
          `${where}.resourceType`,
          `Expected resource type '${expectedType}', found '${type}'`,
        ),
      );
    }
    const outer = this.scope;
    const budget = this.budget;
    this.scope = container
      ? { resource, rootResource: outer.rootResource, budget }
      : { resource, rootResource: resource, budget };
    try {
      if (table.elements.has('contained')) this.checks.containedIds(resource, path ?? type, issues);
      this.validateObject(table, resource, path ?? type, issues);
    } finally {
      this.scope = outer;
    }
  }

  private validateObject(
    table: ElementTable,
    object: JsonObject,
    path: string,
    issues: ValidationIssue[],
  ): void {
    if (this.depth >= MAX_DEPTH) {
      issues.push(errorIssue('structure', path, `Elements are nested more than ${MAX_DEPTH} levels deep`));
      return;
    }
    this.depth++;
    try {
      this.validateProperties(table, object, path, issues);
      this.checks.object(table, object, path, issues, this.scope);
    } finally {
      this.depth--;
    }
  }

  private validateProperties(
    table: ElementTable,
    object: JsonObject,
    path: string,
    issues: ValidationIssue[],
  ): void {
    let present = 0;
    // Choice elements seen, by their `[x]` name: an ElementDefinition has ten groups of fifty names,
    // so looking at the object's own keys is far cheaper than probing every name of every group.
    let choices: Map<string, string> | undefined;
    let conflicts: [string, string, string][] | undefined;
    const noteChoice = (group: string, jsonName: string) => {
      const first = (choices ??= new Map()).get(group);
      if (first === undefined) choices.set(group, jsonName);
      else if (first !== jsonName) (conflicts ??= []).push([group, first, jsonName]);
    };
    for (const key in object) {
      const value = object[key];
      if (value === undefined) continue;
      present++;
      if (key === 'resourceType' && table.isResource) continue;
      const rule = table.elements.get(key);
      if (rule) {
        if (rule.choiceOf) noteChoice(rule.choiceOf, rule.jsonName);
        const extension = rule.isPrimitive ? object[`_${key}`] : undefined;
        this.validateElement(rule, value, extension, `${path}.${key}`, issues);
        continue;
      }
      const primitiveRule = key.charCodeAt(0) === 0x5f ? table.elements.get(key.slice(1)) : undefined;
      if (primitiveRule?.choiceOf) noteChoice(primitiveRule.choiceOf, primitiveRule.jsonName);
      if (primitiveRule?.isPrimitive) {
        const primitive = object[primitiveRule.jsonName];
        this.validatePrimitiveExtension(primitiveRule, value, primitive, `${path}.${key}`, issues);
        if (primitiveRule.binding?.valueSet)
          this.checks.codeOnlyExtended(
            primitiveRule,
            primitive,
            value,
            `${path}.${primitiveRule.jsonName}`,
            issues,
          );
        continue;
      }
      issues.push(errorIssue('structure', `${path}.${key}`, `Unknown element '${key}' in ${table.key}`));
    }
    if (present === 0) {
      issues.push(errorIssue('structure', path, 'Empty objects are not allowed; omit the element instead'));
      return;
    }
    const reported = new Set<string>();
    for (const [group, first, second] of conflicts ?? []) {
      if (reported.has(group)) continue;
      reported.add(group);
      issues.push(
        errorIssue(
          'structure',
          `${path}.${group}`,
          `Only one choice allowed, found both '${first}' and '${second}'`,
        ),
      );
    }
    for (const rule of table.required) {
      if (!rule.jsonNames.some((name) => hasElement(object, name))) {
        issues.push(
          errorIssue('required', `${path}.${rule.name}`, `Required element '${rule.name}' is missing`),
        );
      }
    }
  }

  private validateElement(
    rule: ElementRule,
    value: unknown,
    extension: unknown,
    path: string,
    issues: ValidationIssue[],
  ): void {
    if (value === null) {
      issues.push(errorIssue('structure', path, 'null is not allowed; omit the element instead'));
      return;
    }
    if (!rule.isArray) {
      if (Array.isArray(value)) {
        issues.push(
          errorIssue('structure', path, `'${rule.jsonName}' allows one value and must not be an array`),
        );
        return;
      }
      this.validateValue(rule, value, path, issues);
      return;
    }
    if (!Array.isArray(value)) {
      issues.push(errorIssue('structure', path, `'${rule.jsonName}' repeats and must be an array`));
      return;
    }
    if (value.length === 0) {
      issues.push(errorIssue('structure', path, 'Empty arrays are not allowed; omit the element instead'));
      return;
    }
    const extensions = Array.isArray(extension) ? extension : undefined;
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      const itemPath = `${path}[${i}]`;
      if (item === null) {
        // A null keeps positions aligned with the `_name` array when only extensions are present there.
        if (!rule.isPrimitive || !isJsonObject(extensions?.[i])) {
          issues.push(
            errorIssue(
              'structure',
              itemPath,
              'null is only allowed where `_' + rule.jsonName + '` has a value',
            ),
          );
        }
        continue;
      }
      this.validateValue(rule, item, itemPath, issues);
    }
  }

  private validateValue(rule: ElementRule, value: unknown, path: string, issues: ValidationIssue[]): void {
    if (rule.isPrimitive) {
      const problem = this.primitive(rule.typeCode)(value);
      if (problem) issues.push(errorIssue(problem.code, path, problem.message, problem.rule));
      else {
        if (rule.binding || rule.constraints) this.checks.value(rule, value, path, issues, this.scope);
        if (rule.typeCode === 'xhtml') this.checks.narrativeLinks(value as string, path, issues, this.scope);
      }
      return;
    }
    if (rule.typeCode === 'Resource') {
      if (this.envelopeOnly) return;
      const container = rule.jsonName === 'contained' ? this.scope.resource : undefined;
      this.validateResource(value, issues, path, undefined, container);
      return;
    }
    if (!isJsonObject(value)) {
      issues.push(
        errorIssue('structure', path, `Expected an object (${rule.typeCode}), found ${jsonKind(value)}`),
      );
      return;
    }
    const table = this.tables.table(rule.tableKey);
    if (!table) {
      issues.push(errorIssue('invalid', path, `No definition for type '${rule.typeCode}'`));
      return;
    }
    this.validateObject(table, value, path, issues);
    if (rule.binding || rule.constraints) this.checks.value(rule, value, path, issues, this.scope);
  }

  /** `_name` siblings carry id/extension of primitives: https://hl7.org/fhir/R4/json.html#primitive */
  private validatePrimitiveExtension(
    rule: ElementRule,
    extension: unknown,
    value: unknown,
    path: string,
    issues: ValidationIssue[],
  ): void {
    const table = this.tables.table(rule.typeCode);
    if (!table) return;
    if (!rule.isArray) {
      if (!isJsonObject(extension)) {
        issues.push(errorIssue('structure', path, `Expected an object, found ${jsonKind(extension)}`));
        return;
      }
      this.validateObject(table, extension, path, issues);
      return;
    }
    if (!Array.isArray(extension)) {
      issues.push(
        errorIssue('structure', path, `'_${rule.jsonName}' must be an array, found ${jsonKind(extension)}`),
      );
      return;
    }
    if (extension.length === 0) {
      issues.push(errorIssue('structure', path, 'Empty arrays are not allowed; omit the element instead'));
      return;
    }
    if (Array.isArray(value) && value.length !== extension.length) {
      issues.push(
        errorIssue('structure', path, `'_${rule.jsonName}' must have as many items as '${rule.jsonName}'`),
      );
    }
    for (let i = 0; i < extension.length; i++) {
      const item: unknown = extension[i];
      if (item === null) continue;
      if (!isJsonObject(item)) {
        issues.push(
          errorIssue('structure', `${path}[${i}]`, `Expected an object or null, found ${jsonKind(item)}`),
        );
        continue;
      }
      this.validateObject(table, item, `${path}[${i}]`, issues);
    }
  }

  private primitive(typeCode: string): PrimitiveCheck {
    let check = this.primitiveChecks.get(typeCode);
    if (!check) {
      check = primitiveCheck(this.version, typeCode);
      this.primitiveChecks.set(typeCode, check);
    }
    return check;
  }
}

function resourceTypeOf(resource: unknown): string | undefined {
  const type = isJsonObject(resource) ? resource.resourceType : undefined;
  return typeof type === 'string' ? type : undefined;
}

function hasElement(object: JsonObject, name: string): boolean {
  return object[name] !== undefined || object[`_${name}`] !== undefined;
}
