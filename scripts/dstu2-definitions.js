#!/usr/bin/env node
/*
 * Writes libs/fhir/src/definitions/dstu2-structure-definitions.json: the compact form (element paths,
 * cardinality, type codes) of the HL7 FHIR DSTU2 (1.0.2) base StructureDefinitions. HL7 publishes no
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

function compact(sd) {
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

function main() {
  const jar = process.argv[2];
  if (!jar) throw new Error(`usage: dstu2-definitions.js <${ARTIFACT} jar>`);
  const names = execFileSync('unzip', ['-Z1', jar], { encoding: 'utf8' })
    .split('\n')
    .filter((n) => n.startsWith(PROFILE_DIR) && n.endsWith('.profile.xml'));
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
    definitions.push(compact(sd));
  }
  const out = { source: `${ARTIFACT} (HL7 FHIR 1.0.2 base StructureDefinitions)`, aliases, definitions };
  writeFileSync(OUT, JSON.stringify(out) + '\n');
  console.log(`${definitions.length} definitions, ${Object.keys(aliases).length} aliases → ${OUT}`);
}

main();
