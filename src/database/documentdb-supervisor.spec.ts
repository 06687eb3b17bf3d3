import type { DocumentDbChild } from './documentdb-process';
import { DocumentDbSupervisor, RestartBudget, Supervisable } from './documentdb-supervisor';

const policy = { delaysMs: [10, 20, 40], stableMs: 1000 };

describe('RestartBudget', () => {
  it('gives one attempt per delay, then none', () => {
    const b = new RestartBudget(policy);
    expect([b.next(0), b.next(1), b.next(2), b.next(3)]).toEqual([
      { delayMs: 10, attempt: 1, of: 3 },
      { delayMs: 20, attempt: 2, of: 3 },
      { delayMs: 40, attempt: 3, of: 3 },
      undefined,
    ]);
  });

  it('starts counting again after the instance ran stably, not after a short run', () => {
    const b = new RestartBudget(policy);
    b.next(0);
    b.up(100);
    expect(b.next(500)?.attempt).toBe(2); // up 400 ms only
    b.up(600);
    expect(b.next(1600)?.attempt).toBe(1); // up 1 s
  });
});

/** A fake instance: children die when told, repairs succeed or fail as scripted. */
class FakeInstance implements Supervisable {
  downNow: DocumentDbChild[] = [];
  repairs: boolean[] = [];
  repaired = 0;
  private listener?: (which: DocumentDbChild, how: string) => void;
  down = () => this.downNow;
  onUnexpectedExit(l: (which: DocumentDbChild, how: string) => void) {
    this.listener = l;
  }
  die(which: DocumentDbChild) {
    this.downNow = [which];
    this.listener!(which, 'killed by SIGKILL');
  }
  async repair() {
    this.repaired += 1;
    if (this.repairs.shift() === false) throw new Error('gateway exited: bind failed');
    this.downNow = [];
  }
}

function harness(repairs: boolean[]) {
  const instance = new FakeInstance();
  instance.repairs = repairs;
  const timers: Array<{ fn: () => void; ms: number; cancelled: boolean }> = [];
  const log: string[] = [];
  const states: string[] = [];
  const gaveUp: Error[] = [];
  const supervisor = new DocumentDbSupervisor(
    instance,
    {
      log: (m) => log.push(m),
      onState: (s) => states.push(s),
      onGiveUp: (e) => gaveUp.push(e),
      now: () => 0,
      schedule: (fn, ms) => {
        const t = { fn, ms, cancelled: false };
        timers.push(t);
        return { cancel: () => (t.cancelled = true) };
      },
    },
    policy,
  );
  /** Runs the next pending timer and lets the repair settle. */
  const tick = async () => {
    const t = timers.find((x) => !x.cancelled && x.fn);
    if (!t) return false;
    t.cancelled = true;
    t.fn();
    await new Promise((r) => setImmediate(r));
    return true;
  };
  return { instance, supervisor, timers, log, states, gaveUp, tick };
}

describe('DocumentDbSupervisor', () => {
  it('restarts a child that died after a back-off, logging each step', async () => {
    const h = harness([true]);
    h.instance.die('gateway');
    expect(h.timers.map((t) => t.ms)).toEqual([10]);
    await h.tick();
    expect(h.instance.repaired).toBe(1);
    expect(h.states).toEqual(['restarting', 'running']);
    expect(h.log).toEqual([
      'embedded database: gateway exited unexpectedly (killed by SIGKILL)',
      'embedded database: restarting gateway in 10 ms (attempt 1 of 3)',
      'embedded database: restarted (attempt 1); serving again',
    ]);
    expect(h.gaveUp).toEqual([]);
  });

  it('backs off further after failed attempts, and gives up naming the cause', async () => {
    const h = harness([false, false, false]);
    h.instance.die('postgres');
    while (await h.tick());
    expect(h.timers.map((t) => t.ms)).toEqual([10, 20, 40]);
    expect(h.gaveUp).toHaveLength(1);
    expect(h.gaveUp[0].message).toBe(
      'the embedded database could not be restarted (3 attempts); last cause: Error: gateway exited: bind failed',
    );
    expect(h.log.filter((l) => l.includes('failed'))).toHaveLength(3);
  });

  it('schedules one repair for several deaths at once', () => {
    const h = harness([true]);
    h.instance.die('postgres');
    h.instance.die('gateway');
    expect(h.timers).toHaveLength(1);
  });

  it('restarts nothing once stopped (shutdown)', async () => {
    const h = harness([true]);
    h.instance.die('gateway');
    h.supervisor.stop();
    expect(await h.tick()).toBe(false);
    h.instance.die('gateway');
    expect(h.instance.repaired).toBe(0);
    expect(h.timers).toHaveLength(1);
  });
});
