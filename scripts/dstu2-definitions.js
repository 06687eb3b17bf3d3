#!/usr/bin/env node
/*
 * Writes libs/fhir/src/definitions/dstu2-structure-definitions.json: the compact form (element paths,
 * cardinality, type codes, required bindings) of the HL7 FHIR DSTU2 (1.0.2) base StructureDefinitions,
 * and the codes of each value set those required bindings name. HL7 publishes no
 * DSTU2 npm package; its definitions ship unchanged on Maven Central in HAPI's
 * `ca.uhn.hapi.fhir:hapi-fhir-validation-resources-dstu2` (org/hl7/fhir/instance/model/profile/*.xml).
 *
 *   mvn -q dependency:copy -Dartifact=ca.uhn.hapi.fhir:hapi-fhir-validation-resources-dstu2:8.8.1 -DoutputDirectory=/tmp/r2
 *   node scripts/dstu2-definitions.js /tmp/r2/hapi-fhir-validation-resources-dstu2-8.8.1.jar
 */
const { execFileSync } = require('node:child_process');
const { writeFileSync } = require('node:fs');
const { basename, join } = require('node:path');
const { SaxesParser } = require('saxes');

const ARTIFACT = 'ca.uhn.hapi.fhir:hapi-fhir-validation-resources-dstu2:8.8.1';
const PROFILE_DIR = 'org/hl7/fhir/instance/model/profile/';
const OUT = join(__dirname, '..', 'libs/fhir/src/definitions/dstu2-structure-definitions.json');

/** Parses one StructureDefinition XML into the fields kept here (direct children only). */
function parseProfile(xml) {
  const parser = new SaxesParser({ xmlns: false });
  const stack = [];
  const sd = { elements: [] };
  let element;
  let type;
  parser.on('opentag', (tag) => {
    stack.push(tag.name);
    const value = tag.attributes.value;
    const at = stack.join('/');
    if (at === 'StructureDefinition/snapshot/element') element = { types: [] };
    else if (at === 'StructureDefinition/snapshot/element/type') type = {};
    if (value === undefined) return;
    if (stack.length === 2) {
      const field = tag.name;
      if (['name', 'kind', 'abstract', 'constrainedType', 'base', 'fhirVersion', 'url'].includes(field))
        sd[field] = value;
    } else if (element && stack.length === 4 && stack[1] === 'snapshot') {
      if (['path', 'name', 'min', 'max', 'nameReference'].includes(tag.name)) element[tag.name] = value;
    } else if (element && at === 'StructureDefinition/snapshot/element/binding/strength') {
      element.strength = value;
    } else if (element && at === 'StructureDefinition/snapshot/element/binding/valueSetReference/reference') {
      element.valueSet = value;
    } else if (type && stack.length === 5 && stack[3] === 'type') {
      if (tag.name === 'code') type.code = value;
      else if (tag.name === 'profile') type.profile = value;
    }
  });
  parser.on('closetag', () => {
    const at = stack.join('/');
    if (at === 'StructureDefinition/snapshot/element/type') {
      if (type.code) element.types.push(type);
      type = undefined;
    } else if (at === 'StructureDefinition/snapshot/element') {
      sd.elements.push(element);
      element = undefined;
    }
    stack.pop();
  });
  parser.write(xml).close();
  return sd;
}

function compact(sd, valueSets) {
  const byName = new Map(sd.elements.filter((e) => e.name).map((e) => [e.name, e.path]));
  const isPrimitive = /^[a-z]/.test(sd.name);
  const elements = sd.elements
    .filter((e) => !(isPrimitive && e.path === `${sd.name}.value`))
    .map((e) => {
      const out = { path: e.path, min: Number(e.min ?? 0), max: e.max ?? '*' };
      out.types = e.types.map((t) => {
        const profile = t.profile && t.profile.replace(/^.*\//, '');
        // DSTU2 names constrained Quantity types by profile on a `Quantity` type code.
        return profile && t.code !== 'Reference' && t.code !== 'Extension' ? { code: t.code, profile } : { code: t.code };
      });
      // a required binding to a value set whose codes the 1.0.2 value sets list in full
      const bound = e.strength === 'required' && e.valueSet && e.valueSet.replace(/\|.*$/, '');
      if (bound && valueSets.has(bound)) out.binding = { valueSet: bound };
      if (e.nameReference) {
        const target = byName.get(e.nameReference);
        if (!target) throw new Error(`${sd.name}: nameReference ${e.nameReference} not found`);
        out.contentReference = target;
      }
      return out;
    });
  return {
    name: sd.name,
    kind: sd.kind === 'resource' ? 'resource' : isPrimitive ? 'primitive-type' : 'complex-type',
    abstract: sd.abstract === 'true',
    elements,
  };
}

const VALUESET_FILES = ['valuesets.xml', 'v3-codesystems.xml', 'v2-tables.xml'].map(
  (file) => `org/hl7/fhir/instance/model/valueset/${file}`,
);

/**
 * The ValueSets of the 1.0.2 value set bundles: url, inline code system (DSTU2 defines FHIR's code
 * systems inside their value sets), imports, includes (system, listed codes, whether filtered), excludes.
 */
function parseValueSets(xml, into) {
  const parser = new SaxesParser({ xmlns: false });
  const stack = [];
  let vs;
  let include;
  parser.on('opentag', (tag) => {
    stack.push(tag.name);
    const value = tag.attributes.value;
    const at = vs ? stack.slice(stack.lastIndexOf('ValueSet')).join('/') : '';
    if (tag.name === 'ValueSet' && stack[stack.length - 2] === 'resource') {
      vs = { codeSystem: undefined, codes: [], imports: [], includes: [], excludes: 0 };
      return;
    }
    if (!vs) return;
    if (at === 'ValueSet/url') vs.url = value;
    else if (at === 'ValueSet/codeSystem/system') vs.codeSystem = value;
    else if (at.startsWith('ValueSet/codeSystem/') && at.endsWith('concept/code')) vs.codes.push(value);
    else if (at === 'ValueSet/compose/import') vs.imports.push(value);
    else if (at === 'ValueSet/compose/include') vs.includes.push((include = { codes: [], filtered: false }));
    else if (at === 'ValueSet/compose/include/system') include.system = value;
    else if (at === 'ValueSet/compose/include/concept/code') include.codes.push(value);
    else if (at === 'ValueSet/compose/include/filter') include.filtered = true;
    else if (at === 'ValueSet/compose/exclude') vs.excludes += 1;
  });
  parser.on('closetag', (tag) => {
    if (tag.name === 'ValueSet' && vs && stack[stack.length - 2] === 'resource') {
      if (vs.url) into.set(vs.url, vs);
      vs = undefined;
    }
    stack.pop();
  });
  parser.write(xml).close();
}

/**
 * Each value set whose codes can be listed in full from these bundles, as { system: [codes] }; one
 * that names a system not defined here (SNOMED, LOINC, BCP-47 …), filters or excludes is left out:
 * its bindings are not checked (never a false refusal).
 */
function expandAll(valueSets) {
  const systems = new Map();
  for (const vs of valueSets.values()) if (vs.codeSystem) systems.set(vs.codeSystem, vs.codes);
  const done = new Map();
  const expand = (url, seen) => {
    if (done.has(url)) return done.get(url);
    const vs = valueSets.get(url);
    let result = null;
    if (vs && !seen.has(url) && vs.excludes === 0) {
      seen.add(url);
      result = {};
      const add = (system, codes) => (result[system] = [...new Set([...(result[system] ?? []), ...codes])]);
      if (vs.codeSystem) add(vs.codeSystem, vs.codes);
      for (const imported of vs.imports) {
        const sub = expand(imported, seen);
        if (!sub) result = null;
        else if (result) for (const [system, codes] of Object.entries(sub)) add(system, codes);
      }
      for (const include of vs.includes) {
        if (!result) break;
        if (include.filtered || !include.system) result = null;
        else if (include.codes.length > 0) add(include.system, include.codes);
        else if (systems.has(include.system)) add(include.system, systems.get(include.system));
        else result = null;
      }
      if (result && Object.keys(result).length === 0) result = null;
    }
    done.set(url, result);
    return result;
  };
  const expanded = new Map();
  for (const url of valueSets.keys()) {
    const codes = expand(url, new Set());
    if (codes) expanded.set(url, codes);
  }
  return expanded;
}

function main() {
  const jar = process.argv[2];
  if (!jar) throw new Error(`usage: dstu2-definitions.js <${ARTIFACT} jar>`);
  const names = execFileSync('unzip', ['-Z1', jar], { encoding: 'utf8' })
    .split('\n')
    .filter((n) => n.startsWith(PROFILE_DIR) && n.endsWith('.profile.xml'));
  const parsedValueSets = new Map();
  for (const file of VALUESET_FILES)
    parseValueSets(execFileSync('unzip', ['-p', jar, file], { encoding: 'utf8', maxBuffer: 1 << 28 }), parsedValueSets);
  const expanded = expandAll(parsedValueSets);
  const definitions = [];
  const aliases = {};
  for (const name of names.sort()) {
    const xml = execFileSync('unzip', ['-p', jar, name], { encoding: 'utf8', maxBuffer: 1 << 28 });
    const sd = parseProfile(xml);
    if (sd.fhirVersion !== '1.0.2' || !sd.name) continue;
    const url = `http://hl7.org/fhir/StructureDefinition/${sd.name}`;
    if (sd.constrainedType && !/^[a-z]/.test(sd.name)) {
      // A profile: keep only constrained data types used as type codes (SimpleQuantity → Quantity).
      if (sd.kind === 'datatype' && /^[A-Z]/.test(sd.name) && sd.url === url) aliases[sd.name] = sd.constrainedType;
      continue;
    }
    // DSTU2 defines code, id, oid, markdown … as constraints on string/uri/integer: own primitive types.
    if (sd.url !== url) throw new Error(`${basename(name)}: unexpected url ${sd.url}`);
    definitions.push(compact(sd, expanded));
  }
  // only the value sets some required binding names
  const valueSets = {};
  for (const definition of definitions)
    for (const element of definition.elements)
      if (element.binding) valueSets[element.binding.valueSet] = expanded.get(element.binding.valueSet);
  const out = {
    source: `${ARTIFACT} (HL7 FHIR 1.0.2 base StructureDefinitions and value sets)`,
    aliases,
    definitions,
    valueSets,
  };
  writeFileSync(OUT, JSON.stringify(out) + '\n');
  console.log(
    `${definitions.length} definitions, ${Object.keys(aliases).length} aliases, ${Object.keys(valueSets).length} required value sets → ${OUT}`,
  );
}

main();
