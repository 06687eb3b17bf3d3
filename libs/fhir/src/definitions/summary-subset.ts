import { elementTables, type ElementTables } from './element-tables';
import type { FhirVersion } from './fhir-version';

type Json = Record<string, unknown>;

/**
 * The `_summary=true` subset of a resource (https://hl7.org/fhir/R4/search.html#summary): the
 * elements its base definition marks `isSummary`, at every level of its own backbone elements
 * (`Patient.contact`, `Observation.component` …); an element of a data type (`HumanName`, `Coding`)
 * is kept whole, as the HAPI and Blaze servers do. `resourceType` is always kept; `text` and
 * `contained` are not summary elements. A primitive's `_element` sibling follows its element.
 * DSTU2 has no definitions here: its resources come back whole (more than asked, never less).
 * Returns undefined when the version or type has no definition.
 */
export function summarySubset(version: FhirVersion, resource: Json): Json | undefined {
  if (version === 'dstu2') return undefined;
  const tables = elementTables(version);
  const type = String(resource.resourceType);
  if (!tables.table(type)?.isResource) return undefined;
  return { resourceType: type, ...keepSummary(tables, type, resource) };
}

function keepSummary(tables: ElementTables, tableKey: string, value: Json): Json {
  const table = tables.table(tableKey);
  if (!table) return value;
  const kept: Json = {};
  for (const [key, child] of Object.entries(value)) {
    const rule = table.elements.get(key.startsWith('_') ? key.slice(1) : key);
    if (!rule?.isSummary) continue;
    const isBackbone = rule.tableKey.includes('.');
    kept[key] = isBackbone ? backbone(tables, rule.tableKey, child) : child;
  }
  return kept;
}

function backbone(tables: ElementTables, tableKey: string, child: unknown): unknown {
  const one = (item: unknown) =>
    item && typeof item === 'object' ? keepSummary(tables, tableKey, item as Json) : item;
  return Array.isArray(child) ? child.map(one) : one(child);
}
