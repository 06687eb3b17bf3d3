import { correctedExpression } from './expression-corrections';
import { invariantHolds } from './invariants';
import { validateResource } from './validate-resource';

/**
 * The reference validator's reading of invariants (an empty result fails; a few published
 * expressions corrected) and its Questionnaire enableWhen rules.
 */
function errorsOf(resource: unknown, version: 'r4' | 'stu3' = 'r4'): string[] {
  return validateResource(version, resource)
    .filter((i) => i.severity === 'error')
    .map((i) => `${i.path} [${i.rule ?? i.code}]`);
}

describe('an invariant whose result is empty fails', () => {
  it('converts a result as FHIRPath does', () => {
    expect(invariantHolds([true])).toBe(true);
    expect(invariantHolds([false])).toBe(false);
    expect(invariantHolds([])).toBe(false);
    expect(invariantHolds(['x'])).toBe(true);
  });

  const encounter = (period: unknown) => ({
    resourceType: 'Encounter',
    status: 'finished',
    class: { system: 'http://terminology.hl7.org/CodeSystem/v3-ActCode', code: 'AMB' },
    period,
  });

  it('per-1: a date and a dateTime of the same day have no known order', () => {
    expect(errorsOf(encounter({ start: '2023-06-21', end: '2023-06-21T06:20:00Z' }))).toEqual([
      'Encounter.period [per-1]',
    ]);
    expect(errorsOf(encounter({ start: '2023-06-20', end: '2023-06-21T06:20:00Z' }))).toEqual([]);
    expect(errorsOf(encounter({ start: '2023-06-21T06:20:00Z', end: '2023-06-21T07:00:00Z' }))).toEqual([]);
    expect(errorsOf(encounter({ start: '2023-06-21' }))).toEqual([]);
  });

  it('published expressions that relied on empty = holds are evaluated corrected', () => {
    expect(correctedExpression("fullUrl.contains('/_history/').not()")).toBe(
      "fullUrl.exists() implies fullUrl.contains('/_history/').not()",
    );
    // bdl-8 on a transaction entry without fullUrl, ref-1 on a display-only Reference
    const transaction = {
      resourceType: 'Bundle',
      type: 'transaction',
      entry: [
        {
          resource: { resourceType: 'Patient', managingOrganization: { display: 'x' } },
          request: { method: 'POST', url: 'Patient' },
        },
      ],
    };
    expect(errorsOf(transaction)).toEqual([]);
    expect(errorsOf(transaction, 'stu3')).toEqual([]);
  });
});

const item = (linkId: string, extra: Record<string, unknown> = {}) => ({ linkId, type: 'boolean', ...extra });
const when = (question: string) => ({ question, operator: 'exists', answerBoolean: true });
const questionnaire = (...items: unknown[]) => ({
  resourceType: 'Questionnaire',
  status: 'draft',
  item: items,
});

describe('Questionnaire enableWhen', () => {
  it('que-12: two conditions or more need enableBehavior (as the human text says)', () => {
    const two = item('b', { enableWhen: [when('a'), when('a')] });
    expect(errorsOf(questionnaire(item('a'), two))).toEqual(['Questionnaire.item[1] [que-12]']);
    expect(errorsOf(questionnaire(item('a'), { ...two, enableBehavior: 'any' }))).toEqual([]);
    expect(errorsOf(questionnaire(item('a'), item('b', { enableWhen: [when('a')] })))).toEqual([]);
  });

  it('a condition names another question that exists and is not nested inside the item', () => {
    const nested = item('g', { type: 'group', enableWhen: [when('g.1')], item: [item('g.1')] });
    expect(errorsOf(questionnaire(nested))).toEqual([
      'Questionnaire.item[0].enableWhen[0].question [questionnaire-enableWhen]',
    ]);
    expect(errorsOf(questionnaire(item('a', { enableWhen: [when('a')] })))).toEqual([
      'Questionnaire.item[0].enableWhen[0].question [questionnaire-enableWhen]',
    ]);
    expect(errorsOf(questionnaire(item('a', { enableWhen: [when('zz')] })))).toEqual([
      'Questionnaire.item[0].enableWhen[0].question [questionnaire-enableWhen]',
    ]);
    // a question elsewhere in the tree, before or after, is a valid target
    const later = item('g', { type: 'group', item: [item('g.1', { enableWhen: [when('h')] })] });
    expect(errorsOf(questionnaire(later, item('h')))).toEqual([]);
  });

  it('STU3 keeps its own reading (the reference checks targets from R4 on)', () => {
    const stu3 = {
      resourceType: 'Questionnaire',
      status: 'draft',
      item: [{ linkId: 'a', type: 'boolean', enableWhen: [{ question: 'zz', hasAnswer: true }] }],
    };
    expect(errorsOf(stu3, 'stu3')).toEqual([]);
  });
});

describe('SearchParameter', () => {
  const composite = (component?: unknown[]) => ({
    resourceType: 'SearchParameter',
    url: 'http://a.org/SearchParameter/x',
    name: 'x',
    status: 'draft',
    description: 'x',
    code: 'x',
    base: ['Observation'],
    type: 'composite',
    expression: 'Observation',
    ...(component ? { component } : {}),
  });
  const part = (n: number) => ({ definition: `http://a.org/SearchParameter/p${n}`, expression: 'code' });

  it('a composite one needs two components or more (R4 and STU3)', () => {
    expect(errorsOf(composite())).toEqual(['SearchParameter.component [searchparameter-composite]']);
    expect(errorsOf(composite([part(1)]))).toEqual(['SearchParameter.component [searchparameter-composite]']);
    expect(errorsOf(composite([part(1), part(2)]))).toEqual([]);
    const stu3 = { ...composite(), xpathUsage: 'normal' };
    expect(errorsOf(stu3, 'stu3')).toEqual(['SearchParameter.component [searchparameter-composite]']);
  });
});

describe('QuestionnaireResponse answers to a contained Questionnaire (R4)', () => {
  const system = 'http://a.org/cs';
  const valueSet = {
    resourceType: 'ValueSet',
    id: 'vs',
    status: 'active',
    compose: { include: [{ system, concept: [{ code: 'yes' }, { code: 'no' }] }] },
  };
  const response = (valueCoding: Record<string, unknown>, type = 'choice', answerValueSet = '#vs') => ({
    resourceType: 'QuestionnaireResponse',
    status: 'completed',
    questionnaire: '#q',
    contained: [
      {
        resourceType: 'Questionnaire',
        id: 'q',
        status: 'draft',
        item: [{ linkId: 'g', type: 'group', item: [{ linkId: 'a', type, answerValueSet }] }],
      },
      ...(answerValueSet === '#vs' ? [valueSet] : []),
    ],
    item: [{ linkId: 'g', item: [{ linkId: 'a', answer: [{ valueCoding }] }] }],
  });
  const rule = 'QuestionnaireResponse.item[0].item[0].answer[0] [questionnaireresponse-answer-valueset]';

  it('a Coding answer is one of the contained value set codes, with its system', () => {
    expect(errorsOf(response({ system, code: 'yes' }))).toEqual([]);
    expect(errorsOf(response({ system, code: 'maybe' }))).toEqual([rule]);
    expect(errorsOf(response({ code: 'yes' }))).toEqual([rule]);
    expect(errorsOf(response({ code: 'yes' }, 'open-choice'))).toEqual([rule]);
    // text only (open-choice's other way to answer) and value sets not listed here are not judged
    expect(errorsOf(response({ display: 'Yes' }, 'open-choice'))).toEqual([]);
    expect(errorsOf(response({ code: 'yes' }, 'choice', 'http://a.org/ValueSet/other'))).toEqual([]);
  });
});
