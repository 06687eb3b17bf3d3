import { shapedResourceJson } from './resource-subset';

describe('resource subsets', () => {
  it('_elements and _summary subsets keep id/meta and tag SUBSETTED', () => {
    const json = JSON.stringify({
      resourceType: 'Patient',
      id: '1',
      meta: { versionId: '1' },
      text: { div: 'x' },
      gender: 'male',
      name: [],
    });
    const subset = JSON.parse(shapedResourceJson('r4', json, { elements: ['gender', 'Observation.name'] }));
    expect(Object.keys(subset).sort()).toEqual(['gender', 'id', 'meta', 'resourceType']);
    expect(subset.meta.tag[0].code).toBe('SUBSETTED');
    expect(JSON.parse(shapedResourceJson('r4', json, { summary: 'data' })).text).toBeUndefined();
    expect(Object.keys(JSON.parse(shapedResourceJson('r4', json, { summary: 'text' }))).sort()).toEqual([
      'id',
      'meta',
      'resourceType',
      'text',
    ]);
    expect(shapedResourceJson('r4', json, {})).toBe(json);
  });
});
