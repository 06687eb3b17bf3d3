import { OperationOutcomeError } from '@app/fhir';
import {
  AdmissionLane,
  CONTENDED_BUDGET_MS,
  databaseShareFraction,
  FULL_SHARE_COST_MS,
  LaneTicket,
  Liveness,
} from './admission-lane';

/** A clock and a database whose answers the test decides. */
class FakeDatabase implements Liveness {
  time = 1_000;
  answeredAt = 1_000;
  probeAnswers = true;
  probes = 0;
  lastAnswerAt(): number {
    return this.answeredAt;
  }
  probe(): Promise<boolean> {
    this.probes += 1;
    return Promise.resolve(this.probeAnswers);
  }
  /** Time passes; the database answers a command at the end of it when `answering`. */
  advance(ms: number, answering: boolean): void {
    this.time += ms;
    if (answering) this.answeredAt = this.time;
  }
}

const OPTIONS = { name: 'read', capacity: 2, shareWaitMs: 100, stallMs: 250, maxWaitMs: 1_000 };

/** A request's outcome so far: its slot, its refusal, or still waiting. */
function track(entered: Promise<LaneTicket>): { ticket?: LaneTicket; error?: OperationOutcomeError } {
  const state: { ticket?: LaneTicket; error?: OperationOutcomeError } = {};
  entered.then(
    (ticket) => (state.ticket = ticket),
    (error: OperationOutcomeError) => (state.error = error),
  );
  return state;
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('AdmissionLane', () => {
  let db: FakeDatabase;
  let lane: AdmissionLane;
  beforeEach(() => {
    db = new FakeDatabase();
    lane = new AdmissionLane(OPTIONS, db, () => db.time);
  });

  it('runs up to its capacity at once; the next waits and starts when a slot is released (released once)', async () => {
    const a = track(lane.enter('c1'));
    const b = track(lane.enter('c2'));
    const c = track(lane.enter('c3'));
    await settle();
    expect([!!a.ticket, !!b.ticket, !!c.ticket]).toEqual([true, true, false]);
    expect(lane.load).toEqual({ running: 2, waiting: 1 });
    a.ticket!.release();
    a.ticket!.release();
    await settle();
    expect(!!c.ticket).toBe(true);
    expect(lane.load).toEqual({ running: 2, waiting: 0 });
  });

  it('gives a freed slot to the waiting client with the fewest running requests; one client in arrival order', async () => {
    const heavy = [track(lane.enter('heavy')), track(lane.enter('heavy'))];
    const heavyWaiting = [track(lane.enter('heavy')), track(lane.enter('heavy'))];
    db.advance(10, true);
    const light = track(lane.enter('light'));
    await settle();
    heavy[0].ticket!.release();
    await settle();
    // the light client came last but runs nothing: it goes first
    expect([!!light.ticket, !!heavyWaiting[0].ticket]).toEqual([true, false]);
    heavy[1].ticket!.release();
    await settle();
    expect([!!heavyWaiting[0].ticket, !!heavyWaiting[1].ticket]).toEqual([true, false]);
  });

  it('answers 429 with Retry-After to a client over its share that waited shareWaitMs while the database answered and another client waits', async () => {
    track(lane.enter('heavy'));
    track(lane.enter('heavy'));
    const waiting = track(lane.enter('heavy'));
    track(lane.enter('light'));
    db.advance(99, true);
    lane.sweep();
    await settle();
    expect(waiting.error).toBeUndefined();
    db.advance(1, true);
    lane.sweep();
    await settle();
    expect(waiting.error).toMatchObject({ status: 429, headers: { 'Retry-After': '1' } });
    expect(waiting.error!.outcome.issue[0].code).toBe('throttled');
    expect(lane.load).toEqual({ running: 2, waiting: 1 });
  });

  it('lets a client alone in the queue wait its turn past shareWaitMs (no 429), up to maxWaitMs', async () => {
    const running = [track(lane.enter('busy')), track(lane.enter('busy'))];
    const waiting = [track(lane.enter('busy')), track(lane.enter('busy'))];
    db.advance(500, true);
    lane.sweep();
    await settle();
    expect(waiting.map((w) => w.error)).toEqual([undefined, undefined]);
    running[0].ticket!.release();
    await settle();
    expect(!!waiting[0].ticket).toBe(true);
    // a second client arrives: the busy one, over its share, is told to come back
    track(lane.enter('other'));
    db.advance(100, true);
    lane.sweep();
    await settle();
    expect(waiting[1].error).toMatchObject({ status: 429 });
  });

  it('lets a client under its share wait on past shareWaitMs (its turn is next), no 429', async () => {
    const running = [track(lane.enter('heavy')), track(lane.enter('heavy'))];
    const light = track(lane.enter('light'));
    db.advance(200, true);
    lane.sweep();
    await settle();
    expect(light.error).toBeUndefined();
    running[0].ticket!.release();
    await settle();
    expect(!!light.ticket).toBe(true);
  });

  it('does not blame the client while the database answers nothing: no 429, a probe, 503 when the probe is not answered', async () => {
    track(lane.enter('heavy'));
    track(lane.enter('heavy'));
    const waiting = track(lane.enter('heavy'));
    db.advance(200, false);
    lane.sweep();
    await settle();
    expect([waiting.error, db.probes]).toEqual([undefined, 0]);
    db.probeAnswers = false;
    db.advance(50, false);
    lane.sweep();
    await settle();
    expect(db.probes).toBe(1);
    expect(waiting.error).toMatchObject({ status: 503, headers: { 'Retry-After': '5' } });
    expect(waiting.error!.outcome.issue[0].code).toBe('transient');
  });

  it('a probe answered means busy, not hung: no 503; the answer counts, so the share rule applies (429)', async () => {
    track(lane.enter('heavy'));
    track(lane.enter('heavy'));
    const waiting = track(lane.enter('heavy'));
    const light = track(lane.enter('light'));
    db.advance(250, false);
    lane.sweep();
    await settle();
    expect(db.probes).toBe(1);
    expect(waiting.error).toMatchObject({ status: 429 });
    // the client under its share waits on for the next slot
    expect([light.error, light.ticket]).toEqual([undefined, undefined]);
  });

  it('answers 503 to a request that found no slot within maxWaitMs', async () => {
    const running = [track(lane.enter('a')), track(lane.enter('b'))];
    const waiting = track(lane.enter('c'));
    for (let t = 0; t < 1_000; t += 100) {
      db.advance(100, true);
      lane.sweep();
    }
    await settle();
    expect(running.every((r) => r.ticket)).toBe(true);
    expect(waiting.error).toMatchObject({ status: 503 });
    expect(waiting.error!.message).toMatch(/busy/);
  });

  it('drops a waiter whose client went away; the freed slot goes to the next', async () => {
    const first = track(lane.enter('a'));
    track(lane.enter('b'));
    const gone = new AbortController();
    const left = track(lane.enter('c', gone.signal));
    const next = track(lane.enter('d'));
    gone.abort(new Error('closed'));
    await settle();
    expect(left.error?.message).toBe('closed');
    first.ticket!.release();
    await settle();
    expect(!!next.ticket).toBe(true);
    expect(lane.load).toEqual({ running: 2, waiting: 0 });
  });

  describe('cost cap while another client contends', () => {
    const WIDE = { ...OPTIONS, capacity: 8 };
    /** Clients that contend now (as ClientConcurrency.othersContend would say for the others). */
    let contending: Set<string>;
    beforeEach(() => {
      contending = new Set();
      lane = new AdmissionLane(
        WIDE,
        db,
        () => db.time,
        (clientId) => [...contending].some((other) => other !== clientId),
      );
    });
    /** One answered request of `clientId` charged `ms` of database time: the lane learns its cost. */
    const answered = async (clientId: string, ms: number) => {
      const one = track(lane.enter(clientId));
      await settle();
      one.ticket!.release(ms);
    };

    it('alone a client uses every slot, costly or not (work-conserving)', async () => {
      await answered('heavy', 500);
      const burst = Array.from({ length: 10 }, () => track(lane.enter('heavy')));
      await settle();
      expect(burst.filter((r) => r.ticket).length).toBe(8);
      expect(lane.contendedCap('heavy')).toBe(1);
    });

    it('a costly client runs one at a time while another contends; the rest wait behind it, free slots or not, and start as its own end', async () => {
      await answered('heavy', 100);
      contending.add('victim');
      const burst = Array.from({ length: 6 }, () => track(lane.enter('heavy')));
      await settle();
      expect(burst.map((r) => !!r.ticket)).toEqual([true, false, false, false, false, false]);
      expect(lane.load).toEqual({ running: 1, waiting: 5 });
      // the other client is not held behind them: it starts at once
      const victim = track(lane.enter('victim'));
      await settle();
      expect(!!victim.ticket).toBe(true);
      burst[0].ticket!.release(100);
      await settle();
      expect(burst.map((r) => !!r.ticket)).toEqual([true, true, false, false, false, false]);
      // nobody contends any more: the next release lets the rest fill the lane
      contending.clear();
      burst[1].ticket!.release(100);
      await settle();
      expect(burst.filter((r) => r.ticket).length).toBe(6);
    });

    it('a client not known yet counts as costly: its first wave runs one request until one is answered', async () => {
      contending.add('victim');
      const wave = Array.from({ length: 8 }, () => track(lane.enter('fresh')));
      await settle();
      expect(wave.filter((r) => r.ticket).length).toBe(1);
      // its first answer was cheap (2 ms): it may hold CONTENDED_BUDGET_MS / 2 slots (at most the capacity)
      wave[0].ticket!.release(2);
      await settle();
      expect(lane.contendedCap('fresh')).toBe(Math.min(8 - 1, Math.floor(CONTENDED_BUDGET_MS / 2)));
      expect(wave.filter((r) => r.ticket).length).toBe(1 + Math.min(7, lane.contendedCap('fresh')));
    });

    it('cheap requests first, then a costly wave: the wave never holds every slot while another contends (capacity − 1)', async () => {
      for (let i = 0; i < 4; i++) await answered('wave', 1);
      contending.add('victim');
      const wave = Array.from({ length: 8 }, () => track(lane.enter('wave')));
      await settle();
      expect(wave.filter((r) => r.ticket).length).toBe(7);
      const victim = track(lane.enter('victim'));
      await settle();
      expect(!!victim.ticket).toBe(true);
      // its first costly answers bring the cap down (mean 1 → 25.75 → 1 slot)
      wave[0].ticket!.release(100);
      await settle();
      expect(lane.contendedCap('wave')).toBe(1);
      expect(wave.filter((r) => r.ticket).length).toBe(7);
    });

    it('cheap clients keep the full share; the cap follows the running mean of the cost', async () => {
      await answered('cheap', 1);
      // never every slot while another contends: capacity − 1
      expect(lane.contendedCap('cheap')).toBe(8 - 1);
      await answered('mixed', 10);
      expect(lane.contendedCap('mixed')).toBe(2);
      // one costly answer moves the mean by a quarter of the difference: 10 + (90 − 10) / 4 = 30
      await answered('mixed', 90);
      expect(lane.contendedCap('mixed')).toBe(1);
      // no database command at all (a $validate): costs nothing
      await answered('loop-only', 0);
      expect(lane.contendedCap('loop-only')).toBe(8 - 1);
    });

    it("the lane's running mean is the client's expected cost, which its database share scales by", async () => {
      expect(lane.expectedCost('new')).toBeUndefined();
      await answered('mixed', 10);
      await answered('mixed', 90);
      expect(lane.expectedCost('mixed')).toBe(30);
      await answered('heavy', 160);
      expect(databaseShareFraction(lane.expectedCost('heavy'), 0.25)).toBe(FULL_SHARE_COST_MS / 160);
      expect(databaseShareFraction(lane.expectedCost('mixed'), 0.25)).toBe(1);
      expect(databaseShareFraction(lane.expectedCost('new'), 0.25)).toBe(1);
    });

    it('a client is backlogged while more than its cap waits behind its own cost cap; a full lane, one request at a time, one waiting or nobody contending is no backlog', async () => {
      // cheap transactions (15 ms each) one at a time: never backlogged, keeps its whole share
      await answered('flood', 15);
      contending.add('victim');
      expect(lane.contendedCap('flood')).toBe(1);
      const first = track(lane.enter('flood'));
      await settle();
      expect(lane.backlogged('flood')).toBe(false);
      // a second one waits behind the first: no more than twice its cap, not backlogged yet
      const second = track(lane.enter('flood'));
      await settle();
      expect(!!second.ticket).toBe(false);
      expect(lane.backlogged('flood')).toBe(false);
      // a third: more waiting than it runs, backlogged, keeps only the floor of its share
      const third = track(lane.enter('flood'));
      await settle();
      expect(lane.backlogged('flood')).toBe(true);
      expect(databaseShareFraction(lane.expectedCost('flood'), 0.25, lane.backlogged('flood'))).toBe(0.25);
      // nobody contends: not held, so not backlogged (the waiter starts at the next release)
      contending.clear();
      expect(lane.backlogged('flood')).toBe(false);
      contending.add('victim');
      first.ticket!.release(15);
      await settle();
      expect(!!second.ticket).toBe(true);
      expect(lane.backlogged('flood')).toBe(false);
      second.ticket!.release(15);
      await settle();
      third.ticket!.release(15);
      // a full lane (clients of 1 ms reads hold all 8): the victim waits for a slot, not behind its own cap
      await answered('cheap', 1);
      await answered('other', 1);
      const hogs = Array.from({ length: 7 }, () => track(lane.enter('cheap')));
      hogs.push(track(lane.enter('other')));
      await settle();
      expect(hogs.filter((r) => r.ticket).length).toBe(8);
      const victim = track(lane.enter('victim'));
      await settle();
      expect(!!victim.ticket).toBe(false);
      expect(lane.backlogged('victim')).toBe(false);
    });

    it('a request held behind its own client waits past shareWaitMs; after maxWaitMs it gets 429 with Retry-After naming the limit, not 503', async () => {
      await answered('heavy', 100);
      contending.add('victim');
      const running = track(lane.enter('heavy'));
      const held = track(lane.enter('heavy'));
      db.advance(500, true);
      lane.sweep();
      await settle();
      expect(held.error).toBeUndefined();
      db.advance(500, true);
      lane.sweep();
      await settle();
      expect(held.error).toMatchObject({ status: 429, headers: { 'Retry-After': '1' } });
      expect(held.error!.outcome.issue[0].code).toBe('throttled');
      expect(held.error!.message).toMatch(
        /about 100 ms of database time each.*runs 1 at a time.*DB_TIMEOUT_MS/,
      );
      expect(!!running.ticket).toBe(true);
      expect(lane.load).toEqual({ running: 1, waiting: 0 });
    });

    it('a client arriving while only held clients wait starts at once (held waiters do not block the lane)', async () => {
      await answered('heavy', 100);
      contending.add('victim');
      track(lane.enter('heavy'));
      track(lane.enter('heavy'));
      await settle();
      expect(lane.load).toEqual({ running: 1, waiting: 1 });
      expect(lane.tryEnter('victim')).toBeDefined();
      expect(lane.load).toEqual({ running: 2, waiting: 1 });
    });
  });
});

describe('databaseShareFraction', () => {
  it('a client of cheap requests (up to FULL_SHARE_COST_MS each), or not known yet, keeps its whole share', () => {
    for (const ms of [undefined, 0, 3, 10, FULL_SHARE_COST_MS])
      expect(databaseShareFraction(ms, 0.25)).toBe(1);
  });

  it('above it the share shrinks in proportion to the expected cost, down to the floor', () => {
    expect(FULL_SHARE_COST_MS).toBe(2 * CONTENDED_BUDGET_MS);
    expect(databaseShareFraction(2 * FULL_SHARE_COST_MS, 0.25)).toBe(0.5);
    expect(databaseShareFraction(3 * FULL_SHARE_COST_MS, 0.25)).toBeCloseTo(1 / 3);
    // a 1 s request keeps the floor, not 4 %
    expect(databaseShareFraction(1_000, 0.25)).toBe(0.25);
    expect(databaseShareFraction(1_000, 0.1)).toBe(0.1);
  });

  it('a floor of 1 (CLIENT_COSTLY_DATABASE_SHARE_PERCENT=100) turns the scaling off', () => {
    for (const ms of [3, 90, 1_000]) expect(databaseShareFraction(ms, 1)).toBe(1);
  });

  it('a cost that is not a number never shrinks the share', () => {
    expect(databaseShareFraction(Number.NaN, 0.25)).toBe(1);
  });

  it('a backlogged client keeps the floor whatever each request costs; a floor of 1 turns that off too', () => {
    for (const ms of [undefined, 3, 15, 90, 1_000]) expect(databaseShareFraction(ms, 0.25, true)).toBe(0.25);
    for (const ms of [undefined, 15, 1_000]) expect(databaseShareFraction(ms, 1, true)).toBe(1);
    expect(databaseShareFraction(15, 0.25, false)).toBe(1);
  });
});
