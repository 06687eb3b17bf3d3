import { OperationOutcomeError } from '@app/fhir';
import type { Settings } from '../config/settings';
import { ClientConcurrency } from './client-concurrency';

function limiter(rate: number, concurrent = 16, databaseMsPerSecond = 0): ClientConcurrency {
  return new ClientConcurrency({
    clientMaxConcurrentRequests: concurrent,
    clientResponseBytesPerSecond: rate,
    clientDatabaseMsPerSecond: databaseMsPerSecond,
  } as Settings);
}

function refusal(fn: () => unknown): { status?: number; retryAfter?: string; message: string } {
  try {
    fn();
  } catch (error) {
    const e = error as OperationOutcomeError;
    return { status: e.status, retryAfter: e.headers?.['Retry-After'], message: e.message };
  }
  throw new Error('expected a refusal');
}

describe('ClientConcurrency', () => {
  const now = 1_000_000;
  beforeEach(() => jest.useFakeTimers({ now }));
  afterEach(() => jest.useRealTimers());

  it('while another client is active, refuses the request over CLIENT_MAX_CONCURRENT_REQUESTS; a released slot is free again, released once', () => {
    const c = limiter(0, 2);
    c.acquire('c2').release(); // c2 was active just now
    const a = c.acquire('c1');
    c.acquire('c1');
    expect(refusal(() => c.acquire('c1'))).toMatchObject({ status: 429, retryAfter: '1' });
    expect(() => c.acquire('c2')).not.toThrow();
    a.release();
    a.release();
    c.acquire('c1');
    expect(refusal(() => c.acquire('c1')).status).toBe(429);
  });

  it('a client alone on the server is not capped (work-conserving); the cap engages once another client comes', () => {
    const c = limiter(0, 2);
    const alone = Array.from({ length: 32 }, () => c.acquire('c1'));
    const other = c.acquire('c2'); // another client: served at once, c1 is over its cap
    expect(refusal(() => c.acquire('c1'))).toMatchObject({ status: 429, retryAfter: '1' });
    other.release();
    // c2 stays active for a moment after its answer: c1 is still capped
    jest.setSystemTime(now + 500);
    expect(refusal(() => c.acquire('c1')).status).toBe(429);
    // once c2 has been gone for a while, c1 is alone again
    jest.setSystemTime(now + 1500);
    expect(() => c.acquire('c1')).not.toThrow();
    alone.forEach((slot) => slot.release());
  });

  it('a client served past its one-second share waits until it has refilled (Retry-After from the debt)', () => {
    const c = limiter(1000);
    const first = c.acquire('c1');
    first.charge(3500); // 1000 of burst: 2500 in debt
    first.release();
    const refused = refusal(() => c.acquire('c1'));
    expect(refused).toMatchObject({ status: 429, retryAfter: '3' });
    expect(refused.message).toMatch(/CLIENT_RESPONSE_BYTES_PER_SECOND/);
    expect(() => c.acquire('c2').release()).not.toThrow();
    jest.setSystemTime(now + 2400);
    expect(refusal(() => c.acquire('c1')).retryAfter).toBe('1');
    jest.setSystemTime(now + 2600);
    expect(() => c.acquire('c1')).not.toThrow();
  });

  it('rows the engine read but the answer left out are charged while another client is active, not to a client alone', () => {
    const alone = limiter(1000);
    const lone = alone.acquire('c1');
    lone.charge(500);
    lone.chargeUnservedReads(5000);
    lone.release();
    expect(() => alone.acquire('c1')).not.toThrow();

    const shared = limiter(1000);
    shared.acquire('c2').release(); // c2 was active just now
    const slot = shared.acquire('c1');
    slot.charge(500);
    slot.chargeUnservedReads(2000); // 1000 of burst − 500 − 2000: 1500 in debt
    slot.release();
    expect(refusal(() => shared.acquire('c1'))).toMatchObject({ status: 429, retryAfter: '2' });
  });

  it('each admitted request reserves the mean answer size: large answers cannot all start at once', () => {
    const c = limiter(10_000);
    const warm = c.acquire('c1');
    warm.charge(4000); // mean 1000 (a quarter of the first answer), share 6000
    warm.release();
    jest.setSystemTime(now + 1000); // refilled to the burst, mean kept
    const admitted: Array<ReturnType<ClientConcurrency['acquire']>> = [];
    for (let i = 0; i < 20; i++) {
      try {
        admitted.push(c.acquire('c1'));
      } catch {
        break;
      }
    }
    expect(admitted).toHaveLength(10); // 10 × 1000 reserved empties the 10,000 burst
    // a request that ends without an answer (an error) gives its reservation back
    admitted.forEach((slot) => slot.release());
    expect(() => c.acquire('c1')).not.toThrow();
  });

  it('a client ignoring Retry-After pays for each early request beyond twice its cap: Retry-After grows, at most 30 s', () => {
    const c = limiter(1000, 2);
    const first = c.acquire('c1');
    first.charge(3500); // 2500 in debt
    first.release();
    // its other connections, each refused in turn (2 × the cap of 2): no cost
    const tolerated = Array.from({ length: 5 }, () => refusal(() => c.acquire('c1')).retryAfter);
    expect(tolerated).toEqual(Array(5).fill('3'));
    // then each early request costs 50 ms of its rate
    const ignoring = Array.from({ length: 200 }, () => refusal(() => c.acquire('c1')).retryAfter);
    expect(ignoring.at(-1)).toBe('13'); // 2500 + 200 × 50 bytes of debt
    for (let i = 0; i < 1000; i++) refusal(() => c.acquire('c1'));
    expect(refusal(() => c.acquire('c1')).retryAfter).toBe('30');
    // waiting as told: served once the share has refilled
    jest.setSystemTime(now + 30_100);
    expect(() => c.acquire('c1')).not.toThrow();
  });

  it('a client that waits out each Retry-After never pays for its refusals', () => {
    const c = limiter(1000, 2);
    for (let round = 0; round < 5; round++) {
      const slot = c.acquire('c1');
      slot.charge(2500); // 1500 in debt
      slot.release();
      const retryAfter = Array.from({ length: 4 }, () => refusal(() => c.acquire('c1')).retryAfter);
      expect(retryAfter).toEqual(Array(4).fill('2'));
      jest.advanceTimersByTime(3000); // told 2 s; back once the share is full again
    }
  });

  it('database time is charged while another client is active: past its share the client waits (Retry-After from the debt), small answers or not', () => {
    const alone = limiter(0, 16, 1000);
    const lone = alone.acquire('c1');
    lone.chargeDatabaseMs(5000); // alone on the server: nobody waits for the engine
    lone.release();
    expect(() => alone.acquire('c1')).not.toThrow();

    const c = limiter(1_000_000, 16, 1000);
    c.acquire('c2').release(); // c2 was active just now
    const slot = c.acquire('c1');
    slot.charge(100); // a small answer
    slot.chargeDatabaseMs(1800);
    slot.chargeDatabaseMs(1700); // 1000 of burst − 3500: 2500 ms in debt
    slot.release();
    const refused = refusal(() => c.acquire('c1'));
    expect(refused).toMatchObject({ status: 429, retryAfter: '3' });
    expect(refused.message).toMatch(/CLIENT_DATABASE_MS_PER_SECOND/);
    expect(() => c.acquire('c2').release()).not.toThrow();
    jest.setSystemTime(now + 2600);
    expect(() => c.acquire('c1')).not.toThrow();

    const off = limiter(0, 16, 0);
    off.acquire('c2').release();
    const unlimited = off.acquire('c1');
    unlimited.chargeDatabaseMs(1e9);
    unlimited.release();
    expect(() => off.acquire('c1')).not.toThrow();
  });

  it('work is charged only while another caller contends: in flight, or done within 100 ms, not a second ago', () => {
    const c = limiter(0, 16, 1000);
    c.acquire('c2').release(); // c2 done just now
    jest.setSystemTime(now + 50);
    c.chargeWork('c1', '', 'databaseMs', 1500); // c2 done 50 ms ago: contends, 500 ms in debt
    expect(refusal(() => c.acquire('c1')).message).toMatch(/CLIENT_DATABASE_MS_PER_SECOND/);

    const later = limiter(0, 16, 1000);
    later.acquire('c2').release();
    jest.setSystemTime(now + 300); // c2 done 300 ms ago: active for the in-flight cap, no longer contending
    later.chargeWork('c1', '', 'databaseMs', 1500);
    expect(() => later.acquire('c1').release()).not.toThrow();

    const waiting = limiter(0, 16, 1000);
    const held = waiting.acquire('c2'); // c2's request still in flight seconds later
    jest.setSystemTime(now + 5_000);
    waiting.chargeWork('c1', '', 'databaseMs', 1500);
    expect(refusal(() => waiting.acquire('c1')).status).toBe(429);
    held.release();
  });

  it("a user's work share is split only among its client's contending users: a burst right after another user's request is not halved", () => {
    const c = limiter(0, 16, 500);
    const victim = c.acquire('c2'); // another client in flight: work is charged
    c.acquire('c1', 'bob').release(); // bob's last request, done
    jest.setSystemTime(now + 200); // bob no longer contends: alice's part is the client's 500
    const burst = c.acquire('c1', 'alice');
    burst.chargeDatabaseMs(400); // over half of 500, within the whole
    burst.release();
    expect(() => c.acquire('c1', 'alice').release()).not.toThrow();
    // while bob contends, alice's part is half of it
    const bob = c.acquire('c1', 'bob');
    c.chargeWork('c1', 'alice', 'databaseMs', 400);
    expect(refusal(() => c.acquire('c1', 'alice')).message).toMatch(
      /this user was served more than its part .*CLIENT_DATABASE_MS_PER_SECOND/,
    );
    bob.release();
    victim.release();
  });

  it("within a client, users taking turns (never two in flight) are one sequential caller: their work is not charged; a user's work is while another of its users is in flight", () => {
    const c = limiter(0, 16, 500);
    for (let turn = 0; turn < 20; turn++) {
      const slot = c.acquire('c1', turn % 2 ? 'bob' : 'alice'); // bob's answer came a moment ago
      slot.chargeDatabaseMs(400);
      slot.release();
    }
    expect(() => c.acquire('c1', 'alice').release()).not.toThrow();
    const bob = c.acquire('c1', 'bob'); // now running beside alice's next request
    const alice = c.acquire('c1', 'alice');
    alice.chargeDatabaseMs(400);
    alice.release();
    expect(refusal(() => c.acquire('c1', 'alice')).message).toMatch(
      /this user was served more than its part/,
    );
    bob.release();
  });

  it('CLIENT_RESPONSE_BYTES_PER_SECOND=0 turns the byte share off', () => {
    const c = limiter(0);
    const slot = c.acquire('c1');
    slot.charge(1e12);
    slot.release();
    expect(() => c.acquire('c1')).not.toThrow();
  });

  it("a user ignoring Retry-After is charged first: its client's other users are served again within the client's shallow debt", () => {
    const c = limiter(1000, 2);
    const flood = c.acquire('c1', '7');
    flood.charge(3500);
    flood.release();
    for (let i = 0; i < 1000; i++) refusal(() => c.acquire('c1', '7'));
    const own = refusal(() => c.acquire('c1', '7'));
    expect(own.retryAfter).toBe('30');
    expect(own.message).toMatch(/this user was served more than its part .*CLIENT_RESPONSE_BYTES_PER_SECOND/);
    // the client's own share went at most 2 s into debt: user 8 is back after it, user 7 is not
    const other = refusal(() => c.acquire('c1', '8'));
    expect(Number(other.retryAfter)).toBeLessThanOrEqual(2);
    jest.setSystemTime(now + 2_100);
    expect(() => c.acquire('c1', '8').release()).not.toThrow();
    expect(refusal(() => c.acquire('c1', '7')).status).toBe(429);
  });

  it("a user served past its part is charged alone: while it floods, its client's other users keep their share", () => {
    const c = limiter(1000, 16);
    c.acquire('c1', '8').release(); // the app's other user is active: each has a part of 500
    const flood = c.acquire('c1', '7');
    flood.charge(30_000); // 60 s of its part: only the 500 its part covered reach the client's share
    flood.release();
    for (let i = 0; i < 100; i++) refusal(() => c.acquire('c1', '7'));
    for (let i = 0; i < 10; i++) {
      const neighbour = c.acquire('c1', '8'); // never refused
      neighbour.charge(20);
      neighbour.release();
    }
    expect(refusal(() => c.acquire('c1', '7')).message).toMatch(/this user was served more than its part/);
  });

  it("the client's share still bounds the client as a whole: users each within their part spend it together", () => {
    const c = limiter(1000, 16);
    for (const user of ['a', 'b']) c.acquire('c1', user).release();
    for (const user of ['a', 'b']) {
      const slot = c.acquire('c1', user);
      slot.charge(500); // each exactly its part
      slot.release();
    }
    expect(refusal(() => c.acquire('c1', 'c')).message).toMatch(
      /this client was served more than its share .*CLIENT_RESPONSE_BYTES_PER_SECOND/,
    );
  });

  it('othersContend: another client in flight, or done within 100 ms; not the client itself', () => {
    const c = limiter(0);
    expect(c.othersContend('c1')).toBe(false);
    const other = c.acquire('c2');
    expect(c.othersContend('c1')).toBe(true);
    expect(c.othersContend('c2')).toBe(false);
    other.release();
    jest.setSystemTime(now + 50);
    expect(c.othersContend('c1')).toBe(true);
    jest.setSystemTime(now + 300);
    expect(c.othersContend('c1')).toBe(false);
  });

  it('within a client at its cap, a user holding its part is refused and a user under it gets in', () => {
    const c = limiter(0, 4);
    c.acquire('c2').release(); // another client is active: the cap engages
    const held = Array.from({ length: 4 }, () => c.acquire('c1', 'a'));
    const b = c.acquire('c1', 'b'); // under its part (4 / 2 users)
    expect(refusal(() => c.acquire('c1', 'a')).message).toMatch(/this user already has its part \(2\)/);
    c.acquire('c1', 'b');
    expect(refusal(() => c.acquire('c1', 'b')).status).toBe(429);
    held.forEach((slot) => slot.release());
    b.release();
  });

  it('FHIRPath worker time is charged while another caller is active; past its share → 429 naming CLIENT_WORKER_MS_PER_SECOND', () => {
    const c = new ClientConcurrency({
      clientMaxConcurrentRequests: 16,
      clientResponseBytesPerSecond: 0,
      clientWorkerMsPerSecond: 50,
    } as Settings);
    c.chargeWork('c1', '', 'workerMs', 1_000); // alone: nobody waited for the pool
    expect(() => c.acquire('c1').release()).not.toThrow();
    c.acquire('c2').release();
    c.chargeWork('c1', '', 'workerMs', 250); // 50 of burst: 200 in debt at 50 ms/s
    expect(refusal(() => c.acquire('c1'))).toMatchObject({
      status: 429,
      retryAfter: '4',
      message: expect.stringMatching(/FHIRPath worker time .*CLIENT_WORKER_MS_PER_SECOND/),
    });
  });
});
