import { compile } from 'fhirpath';
import * as r4Model from 'fhirpath/fhir-context/r4';
import { structureDefinitions } from '../definitions/structure-definitions';
import { correctedExpression } from './expression-corrections';
import { HAND_CODED, type InvariantScope } from './hand-coded-invariants';
import { invariantHolds } from './invariants';

/**
 * Each hand-coded invariant must agree with the fhirpath engine on the published expression (as the
 * reference corrects it, empty = fails). The cases cover the true, false and empty outcomes of each.
 */
type Json = Record<string, unknown>;

const contained = [{ resourceType: 'Patient', id: 'p1' }];
const withContained = (extra: Json): Json => ({ resourceType: 'Observation', contained, ...extra });
interface Case {
  base: string;
  nodes: Json[];
  resource?: (node: Json) => Json;
  /** For expressions fhirpath.js cannot evaluate (dom-3 throws on `as(canonical)`): the spec's answers. */
  expected?: boolean[];
}

const CASES: Record<string, Case> = {
  'ref-1': {
    base: 'Reference',
    nodes: [
      { reference: '#p1' },
      { reference: '#p2' },
      { reference: 'Patient/1' },
      { display: 'x' },
      { reference: '#' },
    ],
    resource: () => withContained({}),
  },
  'per-1': {
    base: 'Period',
    nodes: [
      { start: '2020-01-01', end: '2020-01-02' },
      { start: '2020-01-02', end: '2020-01-01' },
      { start: '2020-01', end: '2020-01-15' },
      { start: '2020-02', end: '2020-01-15' },
      { start: '2020-01-01T10:00:00Z', end: '2020-01-01T10:30:00+01:00' },
      { start: '2020-01-01T10:00:00Z', end: '2020-01-01T12:00:00+01:00' },
      { start: '2020-01-01T10:00:00.5Z', end: '2020-01-01T10:00:00.25Z' },
      { start: '2020-01-02', end: '2020-01-01T10:00:00Z' },
      { start: '2020-01-01', end: '2020-01-01T10:00:00Z' },
      { start: '2020-01-01T10:00Z', end: '2020-01-01T09:00Z' },
      { start: '2020-01-01' },
      { end: '2020-01-01', _start: { extension: [{ url: 'x', valueString: 'y' }] } },
    ],
  },
  'dom-2': {
    base: 'Observation',
    nodes: [
      withContained({}),
      withContained({ contained: [{ resourceType: 'Patient', id: 'a', contained }] }),
      {},
    ],
  },
  'dom-3': {
    base: 'Observation',
    nodes: [
      withContained({ subject: { reference: '#p1' } }),
      withContained({}),
      withContained({ subject: { reference: '#p2' } }),
      {
        resourceType: 'Observation',
        contained: [
          { resourceType: 'Patient', id: 'p1', link: [{ other: { reference: '#' }, type: 'seealso' }] },
        ],
      },
      withContained({ instantiatesCanonical: ['#p1'] }),
    ],
    expected: [true, false, false, true, true],
  },
  'dom-4': {
    base: 'Observation',
    nodes: [
      withContained({}),
      { contained: [{ resourceType: 'Patient', id: 'a', meta: { versionId: '1' } }] },
      { contained: [{ resourceType: 'Patient', id: 'a', meta: { lastUpdated: '2020-01-01T00:00:00Z' } }] },
    ],
  },
  'dom-5': {
    base: 'Observation',
    nodes: [
      withContained({}),
      { contained: [{ resourceType: 'Patient', id: 'a', meta: { security: [{ code: 'R' }] } }] },
    ],
  },
  'ext-1': {
    base: 'Extension',
    nodes: [
      { url: 'a', valueString: 'x' },
      { url: 'a', extension: [{ url: 'b', valueString: 'x' }] },
      { url: 'a' },
      { url: 'a', valueString: 'x', extension: [{ url: 'b', valueString: 'y' }] },
    ],
  },
  'obs-6': {
    base: 'Observation',
    nodes: [
      { valueString: 'x' },
      { dataAbsentReason: { text: 'x' } },
      { valueString: 'x', dataAbsentReason: { text: 'x' } },
      {},
    ],
  },
  'obs-7': {
    base: 'Observation',
    nodes: [
      {
        resourceType: 'Observation',
        code: { coding: [{ system: 's', code: 'c' }] },
        valueString: 'x',
        component: [{ code: { coding: [{ system: 's', code: 'c' }] } }],
      },
      {
        resourceType: 'Observation',
        code: { coding: [{ system: 's', code: 'c' }] },
        valueString: 'x',
        component: [{ code: { coding: [{ system: 's', code: 'd' }] } }],
      },
      {
        resourceType: 'Observation',
        code: { coding: [{ system: 's', code: 'c' }] },
        component: [{ code: { coding: [{ system: 's', code: 'c' }] } }],
      },
      {
        resourceType: 'Observation',
        code: { coding: [{ code: 'c', system: 's', display: 'x' }] },
        valueString: 'x',
        component: [{ code: { coding: [{ system: 's', code: 'c' }] } }],
      },
    ],
    resource: (node) => node,
  },
  'que-7': {
    base: 'Questionnaire.item.enableWhen',
    nodes: [
      { question: 'q', operator: 'exists', answerBoolean: true },
      { question: 'q', operator: 'exists', answerString: 'yes' },
      { question: 'q', operator: '=', answerString: 'yes' },
    ],
    // fhirpath.js says `answerBoolean is Boolean` is false; the spec (and HAPI) say true.
    expected: [true, false, true],
  },
  'qty-3': { base: 'Quantity', nodes: [{ code: 'kg' }, { code: 'kg', system: 'u' }, { value: 1 }] },
  'cpt-2': {
    base: 'ContactPoint',
    nodes: [{ value: '1' }, { value: '1', system: 'phone' }, { use: 'home' }],
  },
  'att-1': {
    base: 'Attachment',
    nodes: [{ data: 'AAAA' }, { data: 'AAAA', contentType: 'x/y' }, { url: 'http://a' }],
  },
  'bdl-3': {
    base: 'Bundle',
    nodes: [
      bundle('transaction', [{ resource: patient('a'), request: put('a') }]),
      bundle('transaction', [{ resource: patient('a') }, { resource: patient('b'), request: put('b') }]),
      bundle('batch', []),
      bundle('collection', [{ resource: patient('a') }]),
      bundle('collection', [{ resource: patient('a'), request: put('a') }]),
      bundle('history', [{ resource: patient('a'), request: put('a'), response: { status: '200' } }]),
      { resourceType: 'Bundle', entry: [{ resource: patient('a') }] },
      bundle('batch', [{ _fullUrl: { extension: [{ url: 'x', valueString: 'y' }] }, request: put('a') }]),
    ],
    resource: (node) => node,
  },
  'bdl-4': {
    base: 'Bundle',
    nodes: [
      bundle('transaction-response', [{ response: { status: '201' } }]),
      bundle('batch-response', [{ resource: patient('a') }]),
      bundle('transaction', [{ resource: patient('a'), request: put('a') }]),
      bundle('searchset', [{ resource: patient('a'), response: { status: '200' } }]),
    ],
    resource: (node) => node,
  },
  'bdl-5': {
    base: 'Bundle.entry',
    nodes: [
      { resource: patient('a') },
      { request: put('a') },
      { response: { status: '200' } },
      { fullUrl: 'urn:uuid:1' },
      {},
    ],
  },
  'bdl-7': {
    base: 'Bundle',
    nodes: [
      bundle('transaction', [entry('urn:uuid:1'), entry('urn:uuid:2'), { request: put('c') }]),
      bundle('transaction', [entry('urn:uuid:1'), entry('urn:uuid:1')]),
      bundle('collection', [entry('http://s/Patient/a', '1'), entry('http://s/Patient/a', '2')]),
      bundle('collection', [entry('http://s/Patient/a', '1'), entry('http://s/Patient/a', '1')]),
      bundle('history', [entry('urn:uuid:1'), entry('urn:uuid:1')]),
      // `&` joins the two: (a, 1b) and (a1, b) are the same string.
      bundle('collection', [entry('a', '1b'), entry('a1', 'b')]),
      { resourceType: 'Bundle', entry: [entry('urn:uuid:1'), entry('urn:uuid:1')] },
      { resourceType: 'Bundle', entry: [entry('urn:uuid:1'), entry('urn:uuid:2')] },
      bundle('batch', [{ fullUrl: 'urn:uuid:1', request: put('a') }, { fullUrl: 'urn:uuid:1' }]),
    ],
    resource: (node) => node,
  },
  'bdl-8': {
    base: 'Bundle.entry',
    nodes: [
      { fullUrl: 'http://s/Patient/a' },
      { fullUrl: 'http://s/Patient/a/_history/2' },
      { resource: patient('a') },
    ],
  },
};

function patient(id: string, versionId?: string): Json {
  return { resourceType: 'Patient', id, ...(versionId ? { meta: { versionId } } : {}) };
}

function put(id: string): Json {
  return { method: 'PUT', url: `Patient/${id}` };
}

function entry(fullUrl: string, versionId?: string): Json {
  return { fullUrl, resource: patient('a', versionId) };
}

function bundle(type: string, entries: Json[]): Json {
  return { resourceType: 'Bundle', type, entry: entries };
}

const published = new Map<string, string[]>();
for (const definition of structureDefinitions('r4').byType.values())
  for (const element of definition.elements)
    for (const c of element.constraints ?? [])
      published.set(c.key, [...(published.get(c.key) ?? []), c.expression]);

describe('hand-coded invariants agree with fhirpath', () => {
  it('cover every hand-coded key', () => {
    expect(Object.keys(CASES).sort()).toEqual(Object.keys(HAND_CODED).sort());
  });

  for (const [key, { base, nodes, resource, expected: given }] of Object.entries(CASES)) {
    it(key, () => {
      const expression = HAND_CODED[key].expressions[0];
      expect(published.get(key)).toContain(expression);
      const engine = compile({ base, expression: correctedExpression(expression) }, r4Model, {
        traceFn: () => undefined,
      });
      nodes.forEach((node, i) => {
        const root = resource?.(node) ?? (node.resourceType ? node : withContained({}));
        const scope: InvariantScope = { resource: root, rootResource: root };
        let expected = given?.[i];
        if (expected === undefined) {
          const result = engine(node, { resource: root, rootResource: root }) as unknown[];
          expected = invariantHolds(result);
        }
        const hand = HAND_CODED[key].check(node, scope);
        // undefined means "ask the engine", which then gives the expected answer by construction.
        if (hand !== undefined) expect({ node, holds: hand }).toEqual({ node, holds: expected });
      });
    });
  }
});
