import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { DefinedFhirVersion, FhirVersion } from './fhir-version';
import dstu2Definitions from './dstu2-structure-definitions.json';

/**
 * Compact form of the base StructureDefinitions of one FHIR version, read from the official HL7 npm
 * packages (R4, STU3) or, for DSTU2, which has none on npm, from the HL7 1.0.2 definitions compacted
 * by scripts/dstu2-definitions.js. Only what structural validation needs is kept: element paths,
 * cardinality, type codes and the primitive regexes.
 */
export interface ElementTypeRef {
  /** FHIR type code (`string`, `HumanName`, `Resource`, `BackboneElement` …). */
  readonly code: string;
  /** Name of the constrained type the element uses (R4 `Quantity` + profile `SimpleQuantity`). */
  readonly profile?: string;
}

export interface ElementDefinitionLite {
  readonly path: string;
  readonly min: number;
  /** `'*'` or a number as a string, as in ElementDefinition.max. */
  readonly max: string;
  readonly types: readonly ElementTypeRef[];
  /** Path (without `#`) of the element whose definition this one reuses, e.g. `Questionnaire.item`. */
  readonly contentReference?: string;
  /** ElementDefinition.isSummary: part of the `_summary=true` subset (search.html#summary). */
  readonly isSummary?: true;
  /** The binding, kept only when it can refuse a value: strength `required`, or a maximum value set. */
  readonly binding?: RequiredBinding;
  /** Invariants of severity `error` declared on this element (ele-1 left out: the walker checks it). */
  readonly constraints?: readonly ConstraintLite[];
}

/** https://hl7.org/fhir/R4/elementdefinition-definitions.html#ElementDefinition.binding */
export interface RequiredBinding {
  /** Canonical URL of the required value set, without `|version`; undefined for a maximum-only binding. */
  readonly valueSet?: string;
  /** `elementdefinition-maxValueSet`: codes outside it are errors even where the binding is weaker. */
  readonly maxValueSet?: string;
}

/** https://hl7.org/fhir/R4/elementdefinition-definitions.html#ElementDefinition.constraint */
export interface ConstraintLite {
  readonly key: string;
  readonly human: string;
  readonly expression: string;
}

export interface BaseStructureDefinition {
  readonly name: string;
  readonly kind: 'resource' | 'complex-type' | 'primitive-type';
  readonly abstract: boolean;
  readonly elements: readonly ElementDefinitionLite[];
  /** For primitive types: the regex of `<type>.value` (unanchored, as published), if any. */
  readonly valueRegex?: string;
}

export interface StructureDefinitionSet {
  /** Base definitions by type name (`Patient`, `HumanName`, `date` …). */
  readonly byType: ReadonlyMap<string, BaseStructureDefinition>;
  /** Constrained complex types used as type codes (e.g. STU3 `SimpleQuantity`) → their base type. */
  readonly typeAliases: ReadonlyMap<string, string>;
  /** Invariants such a constrained type adds to its base (`SimpleQuantity` sqty-1: no comparator). */
  readonly aliasConstraints: ReadonlyMap<string, readonly ConstraintLite[]>;
}

const PACKAGE_BY_VERSION: Record<DefinedFhirVersion, string> = {
  r4: 'hl7.fhir.r4.examples',
  stu3: 'hl7.fhir.r3.examples',
};

/** R4 marks the FHIR type of `System.String`-typed elements (e.g. Element.id) with this extension. */
const FHIR_TYPE_EXTENSION = 'http://hl7.org/fhir/StructureDefinition/structuredefinition-fhir-type';
/** R4 uses `…/regex`, STU3 `…/structuredefinition-regex`. */
const REGEX_EXTENSIONS = new Set([
  'http://hl7.org/fhir/StructureDefinition/regex',
  'http://hl7.org/fhir/StructureDefinition/structuredefinition-regex',
]);

interface RawExtension {
  url?: string;
  valueUrl?: string;
  valueUri?: string;
  valueString?: string;
  valueCanonical?: string;
  valueReference?: { reference?: string };
}
interface RawType {
  code?: string;
  profile?: string[] | string;
  extension?: RawExtension[];
}
interface RawConstraint {
  key?: string;
  severity?: string;
  human?: string;
  expression?: string;
}
interface RawBinding {
  strength?: string;
  valueSet?: string;
  valueSetReference?: { reference?: string };
  valueSetUri?: string;
  extension?: RawExtension[];
}
interface RawElement {
  id?: string;
  constraint?: RawConstraint[];
  binding?: RawBinding;
  path: string;
  min?: number;
  max?: string;
  type?: RawType[];
  contentReference?: string;
  isSummary?: boolean;
}
interface RawStructureDefinition {
  resourceType: string;
  name?: string;
  type?: string;
  kind?: string;
  abstract?: boolean;
  derivation?: string;
  baseDefinition?: string;
  snapshot?: { element: RawElement[] };
  differential?: { element: RawElement[] };
}

const cache = new Map<FhirVersion, StructureDefinitionSet>();

/** Base StructureDefinitions of a version; the package files are read once, on first use, then cached. */
export function structureDefinitions(version: FhirVersion): StructureDefinitionSet {
  let set = cache.get(version);
  if (!set) {
    set = version === 'dstu2' ? loadDstu2Definitions() : loadStructureDefinitions(packageDirectory(version));
    cache.set(version, set);
  }
  return set;
}

/**
 * DSTU2 types `uri` as xs:anyURI with no regex (https://hl7.org/fhir/DSTU2/datatypes.html#uri). The
 * DSTU2 reference validator refuses a uri with leading or trailing whitespace and one that starts
 * with `oid:` or `uuid:` (the `urn:` prefix forgotten); whitespace inside it lets pass (Synthea's
 * DSTU2 Organization.type uses the system "Healthcare Provider").
 */
const DSTU2_REGEX: Readonly<Record<string, string>> = { uri: '(?!oid:|uuid:)\\S(?:[\\s\\S]*\\S)?' };

/**
 * DSTU2 StructureDefinitions carry no regex for primitive values. The data type formats did not
 * change from DSTU2 to STU3 (https://hl7.org/fhir/DSTU2/datatypes.html#primitive), so the STU3
 * package's regexes serve for both.
 */
function loadDstu2Definitions(): StructureDefinitionSet {
  const stu3 = structureDefinitions('stu3').byType;
  const byType = new Map<string, BaseStructureDefinition>();
  for (const definition of dstu2Definitions.definitions as BaseStructureDefinition[]) {
    const valueRegex =
      definition.kind === 'primitive-type'
        ? (DSTU2_REGEX[definition.name] ?? stu3.get(definition.name)?.valueRegex)
        : undefined;
    byType.set(definition.name, valueRegex ? { ...definition, valueRegex } : definition);
  }
  return {
    byType,
    typeAliases: new Map(Object.entries(dstu2Definitions.aliases)),
    aliasConstraints: new Map(),
  };
}

export function packageDirectory(version: DefinedFhirVersion): string {
  return dirname(require.resolve(`${PACKAGE_BY_VERSION[version]}/package.json`));
}

/** Reads a package JSON file; the STU3 package has files that start with a UTF-8 byte order mark. */
export function readPackageJson(file: string): unknown {
  const text = readFileSync(file, 'utf8');
  return JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
}

function loadStructureDefinitions(directory: string): StructureDefinitionSet {
  const byType = new Map<string, BaseStructureDefinition>();
  const typeAliases = new Map<string, string>();
  const aliasConstraints = new Map<string, readonly ConstraintLite[]>();
  for (const file of readdirSync(directory)) {
    if (!file.startsWith('StructureDefinition-') || !file.endsWith('.json')) continue;
    const raw = readPackageJson(join(directory, file)) as RawStructureDefinition;
    if (raw.resourceType !== 'StructureDefinition' || !raw.type || !raw.snapshot) continue;
    const kind = raw.kind;
    if (kind !== 'resource' && kind !== 'complex-type' && kind !== 'primitive-type') continue;
    if (raw.derivation === 'constraint') {
      // A profile. Keep only the name → base type mapping for constrained types used as type codes.
      if (kind === 'complex-type' && raw.type !== 'Extension' && raw.name && raw.name !== raw.type) {
        typeAliases.set(raw.name, raw.type);
        const root = raw.differential?.element.find((e) => e.path === raw.type);
        const own = root ? bindingAndConstraints(root).constraints : undefined;
        if (own) aliasConstraints.set(raw.name, own);
      }
      continue;
    }
    if (raw.derivation !== 'specialization' && raw.baseDefinition) continue;
    byType.set(raw.type, toBaseDefinition(raw, kind));
  }
  return { byType, typeAliases, aliasConstraints };
}

function toBaseDefinition(
  raw: RawStructureDefinition,
  kind: BaseStructureDefinition['kind'],
): BaseStructureDefinition {
  const type = raw.type as string;
  const elements: ElementDefinitionLite[] = [];
  let valueRegex: string | undefined;
  for (const element of raw.snapshot?.element ?? []) {
    // Slices (ids with ':') only occur in profiles; skip them defensively.
    if (element.id?.includes(':')) continue;
    if (kind === 'primitive-type' && element.path === `${type}.value`) {
      valueRegex = findRegex(element.type);
      continue;
    }
    elements.push({
      path: element.path,
      min: element.min ?? 0,
      max: element.max ?? '*',
      types: (element.type ?? []).map(typeRef),
      ...(element.contentReference ? { contentReference: element.contentReference.replace(/^.*#/, '') } : {}),
      ...(element.isSummary ? { isSummary: true as const } : {}),
      ...bindingAndConstraints(element),
    });
  }
  return {
    name: type,
    kind,
    abstract: raw.abstract === true,
    elements,
    ...(valueRegex ? { valueRegex } : {}),
  };
}

const MAX_VALUE_SET_EXTENSION = 'http://hl7.org/fhir/StructureDefinition/elementdefinition-maxValueSet';

/** Canonical without `|version` (R4 bindings say `…/administrative-gender|4.0.1`). */
function canonical(url: string | undefined): string | undefined {
  if (!url) return undefined;
  const bar = url.indexOf('|');
  return bar < 0 ? url : url.slice(0, bar);
}

function bindingAndConstraints(element: RawElement): Pick<ElementDefinitionLite, 'binding' | 'constraints'> {
  const out: { binding?: RequiredBinding; constraints?: ConstraintLite[] } = {};
  const raw = element.binding;
  if (raw) {
    // R4 `valueSet`; STU3 `valueSetReference.reference` or `valueSetUri`.
    const url = canonical(raw.valueSet ?? raw.valueSetReference?.reference ?? raw.valueSetUri);
    const max = raw.extension?.find((e) => e.url === MAX_VALUE_SET_EXTENSION);
    const maxValueSet = canonical(max?.valueCanonical ?? max?.valueUri ?? max?.valueReference?.reference);
    const valueSet = raw.strength === 'required' ? url : undefined;
    if (valueSet || maxValueSet)
      out.binding = { ...(valueSet ? { valueSet } : {}), ...(maxValueSet ? { maxValueSet } : {}) };
  }
  const constraints = (element.constraint ?? []).filter(
    (c): c is Required<RawConstraint> =>
      c.severity === 'error' && c.key !== 'ele-1' && !!c.expression && !!c.key,
  );
  if (constraints.length > 0)
    out.constraints = constraints.map((c) => ({
      key: c.key,
      human: c.human ?? c.key,
      expression: c.expression,
    }));
  return out;
}

function typeRef(type: RawType): ElementTypeRef {
  const profiles = Array.isArray(type.profile) ? type.profile : type.profile ? [type.profile] : [];
  const profile = profiles[0]?.replace(/^.*\//, '').replace(/\|.*$/, '');
  return profile ? { code: fhirTypeCode(type), profile } : { code: fhirTypeCode(type) };
}

/** R4 types some elements as `http://hl7.org/fhirpath/System.String`; the extension names the FHIR type. */
function fhirTypeCode(type: RawType): string {
  const code = type.code ?? '';
  if (!code.startsWith('http://hl7.org/fhirpath/')) return code;
  const fhirType = type.extension?.find((e) => e.url === FHIR_TYPE_EXTENSION);
  return fhirType?.valueUrl ?? fhirType?.valueUri ?? 'string';
}

function findRegex(types: readonly RawType[] | undefined): string | undefined {
  for (const type of types ?? []) {
    const regex = type.extension?.find((e) => e.url !== undefined && REGEX_EXTENSIONS.has(e.url));
    if (regex?.valueString) return regex.valueString;
  }
  return undefined;
}
