import { DatabaseClock } from './database-clock';

describe('DatabaseClock (processor sharing)', () => {
  let t = 0;
  let clock: DatabaseClock;
  beforeEach(() => {
    t = 1_000;
    clock = new DatabaseClock(() => t);
  });

  it('a command alone is charged its whole time', () => {
    const end = clock.start();
    t += 40;
    expect(end()).toBe(40);
    expect(clock.commands).toBe(0);
  });

  it('commands running together share the time: each is charged its part, together the time elapsed', () => {
    // a request sends 4 commands at once (a transaction's inserts), each takes 100 ms of wall time
    const ends = Array.from({ length: 4 }, () => clock.start());
    t += 100;
    const shares = ends.map((end) => end());
    // the first to end is counted while 4 ran; then 3 ran for no time, and so on
    expect(shares).toEqual([25, 25, 25, 25]);
    expect(shares.reduce((a, b) => a + b)).toBe(100);
  });

  it("another caller's load is not charged to a victim whose command waits behind it", () => {
    // a flood of 9 commands, and one victim command that runs 100 ms because of them
    const flood = Array.from({ length: 9 }, () => clock.start());
    const victim = clock.start();
    t += 100;
    expect(victim()).toBe(10);
    expect(flood.map((end) => end()).reduce((a, b) => a + b)).toBeCloseTo(90, 9);
  });

  it('overlapping commands: each stretch is divided among those running in it', () => {
    const a = clock.start(); // alone for 10 ms
    t += 10;
    const b = clock.start(); // with a for 20 ms
    t += 20;
    expect(a()).toBe(10 + 10);
    t += 30; // b alone
    expect(b()).toBe(10 + 30);
  });

  it('idle time between commands is nobody’s', () => {
    clock.start()();
    t += 500;
    const end = clock.start();
    t += 5;
    expect(end()).toBe(5);
  });

  it('ending a command twice charges it once; a clock going backwards charges nothing for it', () => {
    const end = clock.start();
    t += 10;
    expect(end()).toBe(10);
    expect(end()).toBe(0);
    expect(clock.commands).toBe(0);
    const late = clock.start();
    t -= 3; // performance.now never does; a clock that did must not make time negative
    expect(late()).toBe(0);
  });
});
