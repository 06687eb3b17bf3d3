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
