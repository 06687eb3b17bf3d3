import { performance } from 'node:perf_hooks';
import { compile, parse } from 'fhirpath';
import * as r4Model from 'fhirpath/fhir-context/r4';
import * as stu3Model from 'fhirpath/fhir-context/stu3';
import type { DefinedFhirVersion } from '../definitions/fhir-version';
import type { ConstraintLite } from '../definitions/structure-definitions';
import { isResourceType } from '../definitions/resource-types';
import { correctedExpression, RESOURCE_TYPES_VALUE_SET } from './expression-corrections';
import { HAND_CODED, NOT_EVALUATED, type InvariantCheck, type InvariantScope } from './hand-coded-invariants';

export type { InvariantScope } from './hand-coded-invariants';

/**
 * The base `constraint`s of severity error (https://hl7.org/fhir/R4/conformance-rules.html#constraints),
 * compiled once per (constraint, context path) and evaluated on every occurrence of the context
 * element. Hot ones are hand-coded with the same semantics (hand-coded-invariants.ts, checked against
 * fhirpath in the spec); the rest run on the `fhirpath` engine behind a guard: when none of the
 * children an expression starts from is present, its value is the one computed once on an empty node.
 */
export interface CompiledInvariant {
  readonly key: string;
  readonly human: string;
  /** True when the element satisfies the invariant. */
  readonly check: InvariantCheck;
}

type AstNode = { type: string; text?: string; children?: AstNode[] };
type Compiled = (node: unknown, env?: Record<string, unknown>) => unknown[];

const MODELS = { r4: r4Model, stu3: stu3Model } as const;
/**
 * trace() in the published expressions (ref-1, dom-3) must not print. isDistinct() is replaced: the
 * engine's compares every pair, so sdf-16 or bdl-7 on a resource with 100,000 items would take
 * minutes; this one keys each item once (same answer for the values these invariants compare).
 */
function optionsFor(version: DefinedFhirVersion): Parameters<typeof compile>[2] {
  return {
    traceFn: () => undefined,
    userInvocationTable: {
      isDistinct: { fn: (items: unknown[]) => [isDistinct(items)], arity: { 0: [] } },
      memberOf: {
        fn: (items: unknown[], url: unknown) => memberOf(version, items, url),
        arity: { 1: ['String'] },
      },
    },
  };
}

/**
 * `memberOf` for the value set a corrected expression names (opd-3: the version's resource types);
 * the engine has no terminology of its own, and no published expression asks about another one, so
 * any other value set is unknown (empty).
 */
function memberOf(version: DefinedFhirVersion, items: readonly unknown[], url: unknown): boolean[] {
  if (url !== RESOURCE_TYPES_VALUE_SET || items.length !== 1) return [];
  const code = valueOf(items[0]);
  return [typeof code === 'string' && isResourceType(version, code)];
}

/** A primitive as the engine hands it to a function: the value itself or a node holding it. */
function valueOf(item: unknown): unknown {
  return typeof item === 'object' && item !== null && 'data' in item ? item.data : item;
}

function isDistinct(items: readonly unknown[]): boolean {
  const seen = new Set<string>();
  for (const item of items) {
    const key =
      typeof item === 'object' && item !== null ? stableJson(item) : `${typeof item}:${String(item)}`;
    if (seen.has(key)) return false;
    seen.add(key);
  }
  return true;
}

function stableJson(value: unknown): string {
  if (typeof value !== 'object' || value === null) return JSON.stringify(value) ?? 'undefined';
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  const object = value as Record<string, unknown>;
  const keys = Object.keys(object)
    .filter((k) => object[k] !== undefined)
    .sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${stableJson(object[k])}`).join(',')}}`;
}

/**
 * Engine time one top-level resource may use. Patient data needs well under a millisecond, the largest
 * official StructureDefinitions about half a second (eld-* on every element); a Bundle of 1,000
 * StructureDefinitions would need minutes, so past the budget
 * the remaining engine invariants are skipped and a warning says so (warnings never refuse).
 */
export const ENGINE_BUDGET_MS = 1_000;

/** Terms that read the focus itself or the environment: an expression with one cannot be guarded. */
const IMPLICIT_FOCUS = new Set([
  'FunctionInvocation',
  'ThisInvocation',
  'IndexInvocation',
  'TotalInvocation',
  'ExternalConstantTerm',
]);

export class InvariantCompiler {
  private readonly cache = new Map<string, CompiledInvariant | null>();
  private readonly options: Parameters<typeof compile>[2];

  constructor(private readonly version: DefinedFhirVersion) {
    this.options = optionsFor(version);
  }

  /** The compiled invariant, or undefined when it is not evaluated here (see NOT_EVALUATED). */
  compile(constraint: ConstraintLite, base: string): CompiledInvariant | undefined {
    const cacheKey = `${constraint.key}\u0000${base}`;
    let compiled = this.cache.get(cacheKey);
    if (compiled === undefined) {
      compiled = this.build(constraint, base);
      this.cache.set(cacheKey, compiled);
    }
    return compiled ?? undefined;
  }

  private build(constraint: ConstraintLite, base: string): CompiledInvariant | null {
    const { key, human } = constraint;
    if (NOT_EVALUATED[this.version][key]) return null;
    let evaluate: Compiled;
    let names: string[] | undefined;
    try {
      const expression = correctedExpression(constraint.expression);
      evaluate = compile({ base, expression }, MODELS[this.version], this.options) as Compiled;
      names = guardNames(parse(expression) as AstNode);
    } catch {
      // An expression the engine cannot compile is a definition problem, not the client's.
      return null;
    }
    const run = (node: unknown, scope: InvariantScope): boolean => {
      const budget = scope.budget;
      if (budget && budget.spentMs > ENGINE_BUDGET_MS) {
        budget.skipped++;
        return true;
      }
      const started = performance.now();
      try {
        return invariantHolds(evaluate(node, { resource: scope.resource, rootResource: scope.rootResource }));
      } catch {
        return true;
      } finally {
        if (budget) budget.spentMs += performance.now() - started;
      }
    };
    const hand = HAND_CODED[key];
    if (hand?.expressions.includes(constraint.expression)) {
      const handCheck = hand.check;
      return { key, human, check: (node, scope) => handCheck(node, scope) ?? run(node, scope) };
    }
    if (!names) return { key, human, check: run };
    const guardNames_ = names;
    const emptyHolds = run({}, { resource: {}, rootResource: {} });
    if (!emptyHolds) return { key, human, check: run };
    return {
      key,
      human,
      check: (node, scope) => {
        if (typeof node !== 'object' || node === null) return run(node, scope);
        const object = node as Record<string, unknown>;
        for (const name of guardNames_) if (hasChild(object, name)) return run(node, scope);
        return true;
      },
    };
  }
}

/**
 * FHIRPath's boolean conversion, as the reference validator applies it to an invariant's result: false
 * and the empty collection fail (e.g. per-1 comparing a date with a dateTime of the same day is
 * empty: the order is unknown); any other value holds. Published expressions that relied on empty
 * meaning "holds" are corrected first (expression-corrections.ts).
 */
export function invariantHolds(result: readonly unknown[]): boolean {
  return result.length > 0 && !(result.length === 1 && result[0] === false);
}

/** A child by element name; a choice name (`value`) matches any of its typed JSON names. */
function hasChild(object: Record<string, unknown>, name: string): boolean {
  if (object[name] !== undefined || object[`_${name}`] !== undefined) return true;
  for (const key in object) {
    if (key.length > name.length && key.startsWith(name)) {
      const next = key.charCodeAt(name.length);
      if (next >= 0x41 && next <= 0x5a) return true;
    }
  }
  return false;
}

/**
 * Children the expression starts from (`start`, `end` in per-1), or undefined when its value can depend
 * on more than those: functions or `$this` on the focus itself, `%resource`, type names as first step.
 */
export function guardNames(ast: AstNode): string[] | undefined {
  const names = new Set<string>();
  let guardable = true;
  const visit = (node: AstNode): void => {
    if (!guardable) return;
    if (node.type === 'InvocationTerm') {
      const first = node.children?.[0];
      if (!first || IMPLICIT_FOCUS.has(first.type)) guardable = false;
      else if (first.type === 'MemberInvocation' && first.text) {
        const name = first.text.replace(/^`|`$/g, '');
        if (/^[A-Z]/.test(name)) guardable = false;
        names.add(name);
      }
    }
    if (IMPLICIT_FOCUS.has(node.type) && node.type !== 'FunctionInvocation') guardable = false;
    for (const child of node.children ?? []) visit(child);
  };
  visit(ast);
  return guardable && names.size > 0 ? [...names] : undefined;
}
