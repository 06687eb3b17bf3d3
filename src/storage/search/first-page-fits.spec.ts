import { parseSearch } from '@app/fhir';
import { FirstPageFits, searchShape } from './first-page-fits';

describe('FirstPageFits', () => {
  it('knows nothing of a shape it has not seen', () => {
    expect(new FirstPageFits().likely('a')).toBe(false);
  });

  it('bets on a plain page once first pages held their matches, and moves off it as they stop', () => {
    const fits = new FirstPageFits();
    fits.record('a', true);
    expect(fits.likely('a')).toBe(true);
    // a few pages that overflow take the rate below the bet
    let overflowing = 0;
    while (fits.likely('a')) {
      fits.record('a', false);
      overflowing++;
    }
    expect(overflowing).toBeGreaterThan(1);
    expect(overflowing).toBeLessThan(10);
    // and a run of pages that fit brings it back
    for (let i = 0; i < 30; i++) fits.record('a', true);
    expect(fits.likely('a')).toBe(true);
  });

  it('starts a shape whose first page overflowed on the counted page', () => {
    const fits = new FirstPageFits();
    fits.record('a', false);
    expect(fits.likely('a')).toBe(false);
  });

  it('keeps at most its number of shapes, forgetting the oldest', () => {
    const fits = new FirstPageFits(2);
    fits.record('a', true);
    fits.record('b', true);
    fits.record('c', true);
    expect(fits.likely('a')).toBe(false);
    expect(fits.likely('b')).toBe(true);
    expect(fits.likely('c')).toBe(true);
  });
});

describe('searchShape', () => {
  const shape = (client: string, query: string) =>
    searchShape(client, parseSearch('r4', 'Condition', [...new URLSearchParams(query)]));

  it('leaves the values out and keeps names, modifiers, sort and page size', () => {
    expect(shape('c1', 'patient=Patient/1')).toBe(shape('c1', 'patient=Patient/2'));
    expect(shape('c1', 'patient=Patient/1&code=a')).toBe(shape('c1', 'code=b&patient=Patient/2'));
    expect(shape('c1', 'patient=Patient/1')).not.toBe(shape('c2', 'patient=Patient/1'));
    expect(shape('c1', 'patient=Patient/1')).not.toBe(shape('c1', 'patient=Patient/1&_count=50'));
    expect(shape('c1', 'patient=Patient/1')).not.toBe(shape('c1', 'patient=Patient/1&_sort=-onset-date'));
    expect(shape('c1', 'code=a')).not.toBe(shape('c1', 'code:not=a'));
  });
});
