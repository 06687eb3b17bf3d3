import { TtlCache } from './ttl-cache';

describe('TtlCache', () => {
  it('expires entries after the ttl', () => {
    let now = 1000;
    const cache = new TtlCache<string>(50, 10, () => now);
    cache.set('a', 'x');
    expect(cache.get('a')).toBe('x');
    now += 49;
    expect(cache.get('a')).toBe('x');
    now += 1;
    expect(cache.get('a')).toBeUndefined();
  });

  it('evicts the oldest entry when full', () => {
    const cache = new TtlCache<number>(1000, 2);
    cache.set('a', 1);
    cache.set('b', 2);
    cache.set('c', 3);
    expect(cache.get('a')).toBeUndefined();
    expect(cache.get('b')).toBe(2);
    expect(cache.get('c')).toBe(3);
  });

  it('drops keys by prefix', () => {
    const cache = new TtlCache<number>(1000);
    cache.set('c1\0a', 1);
    cache.set('c1\0b', 2);
    cache.set('c2\0a', 3);
    cache.deletePrefix('c1\0');
    expect(cache.get('c1\0a')).toBeUndefined();
    expect(cache.get('c1\0b')).toBeUndefined();
    expect(cache.get('c2\0a')).toBe(3);
  });
});
