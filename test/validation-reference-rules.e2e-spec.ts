import request from 'supertest';
import { createTestApp, TestApp } from '@app/testing';
import { bearer, createClient, createUser, TestUser } from '@app/testing/factories';

/**
 * Rules the reference validator (HL7's, inside HAPI) applies that a create must apply too: each bad
 * resource is refused with an OperationOutcome naming the rule, never stored, never a 500.
 */
describe('validation rules of the reference validator (e2e)', () => {
  let t: TestApp;
  let user: TestUser;
  beforeAll(async () => {
    t = await createTestApp({ USER_MGMT_RATE_LIMIT: '100000' });
    user = await createUser(t, await createClient(t));
  });
  afterAll(async () => t?.close());

  const create = (type: string, body: unknown) =>
    request(t.server)
      .post(`/r4/${type}`)
      .set(bearer(user.access_token))
      .set('Content-Type', 'application/fhir+json')
      .send(JSON.stringify(body));

  const refusedFor = async (type: string, body: unknown, rule: string, path: string) => {
    const res = await create(type, body).expect(400);
    expect(res.body.resourceType).toBe('OperationOutcome');
    const errors = res.body.issue.filter((i: any) => i.severity === 'error');
    // the rule is named as the issue's message id
    expect(errors).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          expression: [path],
          extension: [
            expect.objectContaining({ url: expect.stringContaining('message-id'), valueString: rule }),
          ],
        }),
      ]),
    );
  };

  it('per-1: a period from a date to a dateTime of the same day has no known order', async () => {
    const encounter = {
      resourceType: 'Encounter',
      status: 'finished',
      class: { system: 'http://terminology.hl7.org/CodeSystem/v3-ActCode', code: 'AMB' },
      period: { start: '2023-06-21', end: '2023-06-21T06:20:00Z' },
    };
    await refusedFor('Encounter', encounter, 'per-1', 'Encounter.period');
    await create('Encounter', {
      ...encounter,
      period: { start: '2023-06-20', end: encounter.period.end },
    }).expect(201);
  });

  it('que-12 and enableWhen targets', async () => {
    const when = (question: string) => ({ question, operator: 'exists', answerBoolean: true });
    await refusedFor(
      'Questionnaire',
      {
        resourceType: 'Questionnaire',
        status: 'draft',
        item: [
          { linkId: 'a', type: 'boolean' },
          { linkId: 'b', type: 'boolean', enableWhen: [when('a'), when('a')] },
        ],
      },
      'que-12',
      'Questionnaire.item[1]',
    );
    await refusedFor(
      'Questionnaire',
      {
        resourceType: 'Questionnaire',
        status: 'draft',
        item: [
          {
            linkId: 'g',
            type: 'group',
            enableWhen: [when('g.1')],
            item: [{ linkId: 'g.1', type: 'boolean' }],
          },
        ],
      },
      'questionnaire-enableWhen',
      'Questionnaire.item[0].enableWhen[0].question',
    );
    expect(await t.connection.collection('resources').countDocuments({ t: 'Questionnaire' })).toBe(0);
  });

  it('a code with a non-breaking space is refused', async () => {
    const res = await create('CodeSystem', {
      resourceType: 'CodeSystem',
      url: 'http://a.org/cs',
      status: 'active',
      content: 'complete',
      concept: [{ code: 'CHEST\u00a0' }],
    }).expect(400);
    expect(res.body.resourceType).toBe('OperationOutcome');
    expect(res.body.issue).toEqual(
      expect.arrayContaining([expect.objectContaining({ expression: ['CodeSystem.concept[0].code'] })]),
    );
  });

  it('a required code given only as an extension (`_status`) is refused', async () => {
    await refusedFor(
      'DocumentReference',
      {
        resourceType: 'DocumentReference',
        _status: {
          extension: [
            { url: 'http://hl7.org/fhir/StructureDefinition/data-absent-reason', valueCode: 'unknown' },
          ],
        },
        content: [{ attachment: { url: 'http://a.org/doc' } }],
      },
      'http://hl7.org/fhir/ValueSet/document-reference-status',
      'DocumentReference.status',
    );
  });

  it('the url of a canonical resource is absolute', async () => {
    const valueSet = { resourceType: 'ValueSet', url: 'ValueSet/x', status: 'active' };
    await refusedFor('ValueSet', valueSet, 'canonical-url-absolute', 'ValueSet.url');
    await create('ValueSet', { ...valueSet, url: 'http://a.org/ValueSet/x' }).expect(201);
  });

  it('opd-3 lets a parameter of a resource type name target profiles (as the reference corrects it)', async () => {
    const parameter = {
      name: 'p',
      use: 'in',
      min: 0,
      max: '1',
      targetProfile: ['http://a.org/StructureDefinition/p'],
    };
    const operation = (type: string) => ({
      resourceType: 'OperationDefinition',
      url: 'http://a.org/OperationDefinition/x',
      name: 'X',
      status: 'draft',
      kind: 'operation',
      code: 'x',
      system: true,
      type: false,
      instance: false,
      parameter: [{ ...parameter, type }],
    });
    await create('OperationDefinition', operation('QuestionnaireResponse')).expect(201);
    await refusedFor('OperationDefinition', operation('string'), 'opd-3', 'OperationDefinition.parameter[0]');
  });

  it('a reference that matches two entries of a Bundle is refused', async () => {
    const observation = (versionId: string) => ({
      fullUrl: 'http://a.org/fhir/Observation/o1',
      resource: {
        resourceType: 'Observation',
        id: 'o1',
        meta: { versionId },
        status: 'final',
        code: { text: 'x' },
      },
    });
    const list = {
      fullUrl: 'http://a.org/fhir/List/l1',
      resource: {
        resourceType: 'List',
        id: 'l1',
        status: 'current',
        mode: 'working',
        entry: [{ item: { reference: 'Observation/o1' } }],
      },
    };
    const bundle = {
      resourceType: 'Bundle',
      type: 'collection',
      entry: [list, observation('1'), observation('2')],
    };
    await refusedFor(
      'Bundle',
      bundle,
      'bundle-multiple-matches',
      'Bundle.entry[0].resource.entry[0].item.reference',
    );
    list.resource.entry[0].item.reference = 'Observation/o1/_history/2';
    await create('Bundle', bundle).expect(201);
  });

  it('a transaction or batch envelope keeps the Bundle invariants (R4, STU3): 400 naming the rule', async () => {
    for (const version of ['r4', 'stu3']) {
      const res = await request(t.server)
        .post(`/${version}`)
        .set(bearer(user.access_token))
        .set('Content-Type', 'application/fhir+json')
        .send(
          JSON.stringify({
            resourceType: 'Bundle',
            type: 'batch',
            entry: [
              {
                resource: { resourceType: 'Patient', gender: 'female' },
                request: { method: 'POST', url: 'Patient' },
                response: { status: '201' },
              },
            ],
          }),
        )
        .expect(400);
      expect(res.body.resourceType).toBe('OperationOutcome');
      const rules = res.body.issue.map((i: any) => i.extension?.[0]?.valueString);
      expect(rules).toContain('bdl-4');
    }
    expect(await t.connection.collection('resources').countDocuments({ t: 'Patient' })).toBe(0);
  });

  it('a Coding answer to a contained Questionnaire is one of its contained value set codes', async () => {
    const system = 'http://a.org/cs';
    const response = (valueCoding: Record<string, unknown>) => ({
      resourceType: 'QuestionnaireResponse',
      status: 'completed',
      questionnaire: '#q',
      contained: [
        {
          resourceType: 'Questionnaire',
          id: 'q',
          status: 'draft',
          item: [{ linkId: 'a', type: 'choice', answerValueSet: '#vs' }],
        },
        {
          resourceType: 'ValueSet',
          id: 'vs',
          status: 'active',
          compose: { include: [{ system, concept: [{ code: 'yes' }] }] },
        },
      ],
      item: [{ linkId: 'a', answer: [{ valueCoding }] }],
    });
    await refusedFor(
      'QuestionnaireResponse',
      response({ code: 'yes' }),
      'questionnaireresponse-answer-valueset',
      'QuestionnaireResponse.item[0].answer[0]',
    );
    await create('QuestionnaireResponse', response({ system, code: 'yes' })).expect(201);
  });

  it('a composite SearchParameter needs two components or more', async () => {
    await refusedFor(
      'SearchParameter',
      {
        resourceType: 'SearchParameter',
        url: 'http://a.org/SearchParameter/x',
        name: 'x',
        status: 'draft',
        description: 'x',
        code: 'x',
        base: ['Observation'],
        type: 'composite',
        expression: 'Observation',
        component: [{ definition: 'http://a.org/SearchParameter/p1', expression: 'code' }],
      },
      'searchparameter-composite',
      'SearchParameter.component',
    );
  });
});
