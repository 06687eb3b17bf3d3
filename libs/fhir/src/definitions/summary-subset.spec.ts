import { summarySubset } from './summary-subset';

describe('summarySubset (_summary=true)', () => {
  const patient = {
    resourceType: 'Patient',
    id: 'p1',
    meta: { versionId: '2' },
    text: { status: 'generated', div: '<div xmlns="http://www.w3.org/1999/xhtml">x</div>' },
    extension: [{ url: 'http://example.org/x', valueString: 'y' }],
    identifier: [{ system: 'http://example.org', value: '7' }],
    name: [{ family: 'Doe', given: ['Jane'] }],
    gender: 'female',
    birthDate: '1980-01-01',
    _birthDate: { extension: [{ url: 'http://example.org/t', valueTime: '10:00:00' }] },
    maritalStatus: { text: 'married' },
    photo: [{ contentType: 'image/png' }],
    contact: [{ relationship: [{ text: 'friend' }], name: { family: 'Roe' } }],
    communication: [{ language: { text: 'en' }, preferred: true }],
    link: [{ other: { reference: 'Patient/p2' }, type: 'seealso' }],
    contained: [{ resourceType: 'Organization', id: 'o' }],
  };

  it('keeps the elements R4 marks isSummary, at every backbone level', () => {
    const subset = summarySubset('r4', patient)!;
    expect(Object.keys(subset).sort()).toEqual(
      [
        '_birthDate',
        'birthDate',
        'gender',
        'id',
        'identifier',
        'link',
        'meta',
        'name',
        'resourceType',
      ].sort(),
    );
    // Patient.link is summary and so are both of its elements; data types are kept whole.
    expect(subset.link).toEqual(patient.link);
    expect(subset.name).toEqual(patient.name);
  });

  it('filters inside backbone elements (Observation.component)', () => {
    const observation = {
      resourceType: 'Observation',
      id: 'o1',
      status: 'final',
      code: { text: 'bp' },
      note: [{ text: 'not summary' }],
      component: [
        {
          code: { text: 'systolic' },
          valueQuantity: { value: 120 },
          interpretation: [{ text: 'normal' }],
        },
      ],
    };
    const subset = summarySubset('r4', observation)!;
    expect(subset.note).toBeUndefined();
    expect(subset.component).toEqual([{ code: { text: 'systolic' }, valueQuantity: { value: 120 } }]);
    expect(summarySubset('stu3', observation)!.status).toBe('final');
  });

  it('leaves DSTU2 and unknown types alone', () => {
    expect(summarySubset('dstu2', patient)).toBeUndefined();
    expect(summarySubset('r4', { resourceType: 'NoSuchType' })).toBeUndefined();
  });
});
