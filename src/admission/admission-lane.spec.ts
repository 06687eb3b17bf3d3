import { OperationOutcomeError } from '@app/fhir';
import { AdmissionLane, LaneTicket, Liveness } from './admission-lane';

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
});
