import type { FhirVersion } from './fhir-version';
import {
  structureDefinitions,
  type ConstraintLite,
  type RequiredBinding,
  type BaseStructureDefinition,
  type ElementDefinitionLite,
  type StructureDefinitionSet,
} from './structure-definitions';

/**
 * Per-type element tables compiled from the snapshots of the base StructureDefinitions.
 * A table describes the JSON properties allowed on one object: a resource (`Patient`), a data type
 * (`HumanName`, also primitives like `date`, whose table holds `id`/`extension` for `_date`), or an
 * inline backbone element (`Patient.contact`). Choice elements (`value[x]`) are expanded to their JSON
 * names (`valueString`, `valueQuantity` …), see https://hl7.org/fhir/R4/formats.html#choice.
 */
export interface ElementRule {
  /** Property name in JSON, e.g. `name`, `valueQuantity`. */
  readonly jsonName: string;
  readonly min: number;
  /** True when ElementDefinition.max is not 1 (JSON then always uses an array, even for one item). */
  readonly isArray: boolean;
  /** FHIR type code after resolving aliases (`SimpleQuantity` → `Quantity`); `Resource` for any resource. */
  readonly typeCode: string;
  readonly isPrimitive: boolean;
  /** Name of the choice element this one expands, e.g. `value[x]`. */
  readonly choiceOf?: string;
  /** Table key of the nested object's element table (type name, or element path for backbones). */
  readonly tableKey: string;
  /** In the `_summary=true` subset (ElementDefinition.isSummary). */
  readonly isSummary: boolean;
  /** A binding that can refuse a code (required, or a maximum value set). */
  readonly binding?: RequiredBinding;
  /**
   * Invariants checked on each occurrence of this element, when it is not a backbone element (those
   * live on the backbone's own table), e.g. org-3 on Organization.telecom, or sqty-1 of SimpleQuantity.
   */
  readonly constraints?: readonly ConstraintLite[];
}

export interface RequiredRule {
  /** Element name as in the definition (`status`, `value[x]`). */
  readonly name: string;
  /** Any of these JSON properties (or their `_` sibling for primitives) satisfies the rule. */
  readonly jsonNames: readonly string[];
}

export interface ChoiceGroup {
  readonly name: string;
  readonly jsonNames: readonly string[];
}

export interface ElementTable {
  /** Type name or element path, e.g. `Patient`, `Patient.contact`, `HumanName`. */
  readonly key: string;
  readonly isResource: boolean;
  readonly elements: ReadonlyMap<string, ElementRule>;
  readonly required: readonly RequiredRule[];
  readonly choiceGroups: readonly ChoiceGroup[];
  /** Invariants of the object itself: the type's root element or the backbone element (per-1, pat-1). */
  readonly constraints: readonly ConstraintLite[];
}

/** Element tables of one version, compiled per StructureDefinition on first use and then cached. */
export class ElementTables {
  private readonly definitions: StructureDefinitionSet;
  private readonly primitiveTypes: ReadonlySet<string>;
  private readonly tables = new Map<string, ElementTable>();

  constructor(version: FhirVersion) {
    this.definitions = structureDefinitions(version);
    this.primitiveTypes = new Set(
      [...this.definitions.byType.values()].filter((sd) => sd.kind === 'primitive-type').map((sd) => sd.name),
    );
  }

  isPrimitiveType(typeCode: string): boolean {
    return this.primitiveTypes.has(typeCode);
  }

  /** The table for a type name or backbone element path; undefined when the definitions have none. */
  table(key: string): ElementTable | undefined {
    const cached = this.tables.get(key);
    if (cached) return cached;
    const dot = key.indexOf('.');
    const definition = this.definitions.byType.get(dot < 0 ? key : key.slice(0, dot));
    if (!definition) return undefined;
    this.compile(definition);
    return this.tables.get(key);
  }

  private compile(definition: BaseStructureDefinition): void {
    const byParent = new Map<string, ElementDefinitionLite[]>();
    const byPath = new Map<string, ElementDefinitionLite>();
    for (const element of definition.elements) {
      byPath.set(element.path, element);
      const dot = element.path.lastIndexOf('.');
      if (dot < 0) continue; // the root element describes the type itself
      const parent = element.path.slice(0, dot);
      let siblings = byParent.get(parent);
      if (!siblings) byParent.set(parent, (siblings = []));
      siblings.push(element);
    }
    for (const [parent, children] of byParent) {
      const isResource = parent === definition.name && definition.kind === 'resource';
      const table = this.buildTable(parent, children, byParent, isResource);
      this.tables.set(parent, { ...table, constraints: byPath.get(parent)?.constraints ?? [] });
    }
    if (!byParent.has(definition.name)) {
      this.tables.set(definition.name, {
        key: definition.name,
        isResource: false,
        elements: new Map(),
        required: [],
        choiceGroups: [],
        constraints: byPath.get(definition.name)?.constraints ?? [],
      });
    }
  }

  private buildTable(
    key: string,
    children: readonly ElementDefinitionLite[],
    byParent: ReadonlyMap<string, readonly ElementDefinitionLite[]>,
    isResource: boolean,
  ): Omit<ElementTable, 'constraints'> {
    const elements = new Map<string, ElementRule>();
    const required: RequiredRule[] = [];
    const choiceGroups: ChoiceGroup[] = [];
    for (const element of children) {
      const name = element.path.slice(element.path.lastIndexOf('.') + 1);
      if (element.max === '0') continue; // prohibited element
      const isArray = element.max !== '1';
      const rules = this.rulesFor(element, name, isArray, byParent, isResource);
      for (const rule of rules) elements.set(rule.jsonName, rule);
      const jsonNames = rules.map((r) => r.jsonName);
      if (name.endsWith('[x]')) choiceGroups.push({ name, jsonNames });
      if (element.min >= 1) required.push({ name, jsonNames });
    }
    return { key, isResource, elements, required, choiceGroups };
  }

  private rulesFor(
    element: ElementDefinitionLite,
    name: string,
    isArray: boolean,
    byParent: ReadonlyMap<string, readonly ElementDefinitionLite[]>,
    isResource: boolean,
  ): ElementRule[] {
    const base = {
      min: element.min,
      isArray,
      isSummary: element.isSummary === true,
      ...(element.binding ? { binding: element.binding } : {}),
    };
    const own = byParent.has(element.path) ? undefined : element.constraints;
    if (element.contentReference) {
      // e.g. Questionnaire.item.item reuses the definition of Questionnaire.item.
      return [
        {
          ...base,
          jsonName: name,
          typeCode: 'BackboneElement',
          isPrimitive: false,
          tableKey: element.contentReference,
        },
      ];
    }
    if (byParent.has(element.path)) {
      // Inline backbone element: its children are defined right here, below its own path.
      const typeCode = element.types[0]?.code ?? 'BackboneElement';
      return [{ ...base, jsonName: name, typeCode, isPrimitive: false, tableKey: element.path }];
    }
    const withConstraints = (code: string, profile?: string) => {
      const aliases = this.definitions.aliasConstraints;
      // Snapshots repeat the type's own invariants on elements (ext-1 on every `extension`): the
      // type's table runs those already.
      const ofType = new Set(this.typeConstraintKeys(this.resolveAlias(code)));
      const constraints = [
        ...(own ?? []).filter((c) => !ofType.has(c.key)),
        ...(aliases.get(code) ?? aliases.get(profile ?? '') ?? []),
      ];
      return constraints.length > 0 ? { constraints } : {};
    };
    if (name.endsWith('[x]')) {
      const stem = name.slice(0, -3);
      // STU3 repeats `Reference` once per target profile; one JSON name per distinct type code.
      const codes = [...new Set(element.types.map((type) => type.code))];
      return codes.map((code) => {
        const typeCode = this.resolveAlias(code);
        return {
          ...base,
          jsonName: stem + code.charAt(0).toUpperCase() + code.slice(1),
          typeCode,
          isPrimitive: this.primitiveTypes.has(typeCode),
          choiceOf: name,
          tableKey: typeCode,
          ...withConstraints(code, element.types.find((t) => t.code === code)?.profile),
        };
      });
    }
    // Resource.id is an `id` (https://hl7.org/fhir/R4/resource.html#id) although R4 types it System.String.
    const declared = isResource && name === 'id' ? 'id' : (element.types[0]?.code ?? 'Element');
    const typeCode = this.resolveAlias(declared);
    return [
      {
        ...base,
        jsonName: name,
        typeCode,
        isPrimitive: this.primitiveTypes.has(typeCode),
        tableKey: typeCode,
        ...withConstraints(declared, element.types[0]?.profile),
      },
    ];
  }

  private typeConstraintKeys(typeCode: string): string[] {
    const definition = this.definitions.byType.get(typeCode);
    const root = definition?.elements.find((e) => e.path === typeCode);
    return (root?.constraints ?? []).map((c) => c.key);
  }

  private resolveAlias(typeCode: string): string {
    return this.definitions.typeAliases.get(typeCode) ?? typeCode;
  }
}

const tablesByVersion = new Map<FhirVersion, ElementTables>();

export function elementTables(version: FhirVersion): ElementTables {
  let tables = tablesByVersion.get(version);
  if (!tables) {
    tables = new ElementTables(version);
    tablesByVersion.set(version, tables);
  }
  return tables;
}
