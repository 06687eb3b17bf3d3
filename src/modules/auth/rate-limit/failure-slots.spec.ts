import { FailureSlots } from './failure-slots';

describe('FailureSlots', () => {
  const pair = { key: 'p', limit: 2, until: 1_000 };
  const address = { key: 'a', limit: 3, until: 1_000 };

  it('takes a slot of every counter or of none', () => {
    const slots = new FailureSlots(() => 0);
    expect(slots.take([pair, address])).toBe(true);
    expect(slots.take([pair, address])).toBe(true);
    // the pair is spent: the address keeps its third slot
    expect(slots.take([pair, address])).toBe(false);
    expect(slots.count('a')).toBe(2);
    expect(slots.take([{ ...pair, key: 'p2' }, address])).toBe(true);
    expect(slots.take([{ ...pair, key: 'p3' }, address])).toBe(false);
  });

  it('a slot given back can be taken again; a filled counter refuses until its window ends', () => {
    let now = 0;
    const slots = new FailureSlots(() => now);
    expect(slots.take([pair])).toBe(true);
    expect(slots.take([pair])).toBe(true);
    slots.giveBack([pair]);
    expect(slots.take([pair])).toBe(true);
    slots.fill(address);
    expect(slots.take([address])).toBe(false);
    now = 1_000;
    expect(slots.take([pair, address])).toBe(true);
  });
});
