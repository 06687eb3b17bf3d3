import { spawn } from 'child_process';
import { readFileSync } from 'fs';
import { mongo } from 'mongoose';
import {
  AFTER_RESTART_MS,
  DocumentDbSupervisor,
  embeddedDatabaseRecovering,
  embeddedDatabaseVerdict,
} from '../database/documentdb-supervisor';
import { awaitsEngineVerdict, mapError } from './error-mapping';

describe('mapError: database outages are 503, not 500', () => {
  it('maps a network error and a bulk write cut off by one to 503 with Retry-After', () => {
    const network = new mongo.MongoNetworkError('connection 8 to 127.0.0.1:27017 closed');
    const bulk = new mongo.MongoBulkWriteError(
      { message: network.message, errorResponse: network } as never,
      { insertedCount: 0 } as never,
    );
    for (const error of [network, bulk]) {
      const mapped = mapError(error);
      expect(mapped).toMatchObject({ status: 503, code: 'transient', internal: false });
      expect(mapped.headers['Retry-After']).toBeDefined();
    }
  });

  it('a cursor the engine no longer holds (CursorNotFound, code 43) → 503 transient with Retry-After', () => {
    const err = Object.assign(new Error('Provided cursor was not found.'), {
      name: 'MongoServerError',
      code: 43,
      codeName: 'CursorNotFound',
    });
    expect(mapError(err)).toMatchObject({
      status: 503,
      code: 'transient',
      internal: false,
      headers: { 'Retry-After': '5' },
    });
  });

  it('keeps other errors internal (500) without their message', () => {
    const mapped = mapError(new Error('boom: secret detail'));
    expect(mapped.status).toBe(500);
    expect(mapped.message).not.toContain('secret detail');
  });
});

describe('mapError: database time limits', () => {
  it('MaxTimeMSExpired (code 50) → 503 too-costly with Retry-After', () => {
    const err = Object.assign(new Error('terminated due to a command timeout'), {
      name: 'MongoServerError',
      code: 50,
    });
    expect(mapError(err)).toMatchObject({ status: 503, code: 'too-costly', headers: { 'Retry-After': '5' } });
  });

  it('the driver deadline (MongoOperationTimeoutError), also inside a bulk write error → 503 transient', () => {
    const timeout = Object.assign(new Error('Timed out during socket read (1930ms)'), {
      name: 'MongoOperationTimeoutError',
    });
    expect(mapError(timeout)).toMatchObject({ status: 503, code: 'transient', internal: false });
    const bulk = Object.assign(new Error('bulk'), { name: 'MongoBulkWriteError', errorResponse: timeout });
    expect(mapError(bulk)).toMatchObject({ status: 503, headers: { 'Retry-After': '5' } });
  });
});

describe('mapError: the gateway while the embedded PostgreSQL restarts', () => {
  /** What the gateway answers on a connection to a PostgreSQL that is gone (seen with kill -9). */
  const gatewayLostPostgres = () =>
    new mongo.MongoServerError({
      ok: 0,
      code: 1,
      codeName: 'InternalError',
      errmsg: 'An unexpected internal error has occurred.',
    });
  const cutBulkWrite = (inner: Error) =>
    new mongo.MongoBulkWriteError(
      { message: inner.message, code: 1, codeName: 'InternalError', errorResponse: inner } as never,
      { insertedCount: 0 } as never,
    );

  /** A supervisor over a fake instance whose postgres dies, then is repaired on the next timer. */
  function supervised() {
    let listener: (which: 'postgres', how: string) => void = () => undefined;
    let due: (() => void) | undefined;
    let repaired = false;
    const supervisor = new DocumentDbSupervisor(
      {
        down: () => (repaired ? [] : ['postgres']),
        repair: async () => void (repaired = true),
        onUnexpectedExit: (l) => (listener = l),
      },
      {
        log: () => undefined,
        onState: () => undefined,
        onGiveUp: () => undefined,
        schedule: (fn) => ((due = fn), { cancel: () => undefined }),
      },
      { delaysMs: [1], stableMs: 1000 },
    );
    return {
      kill: () => listener('postgres', 'killed by SIGKILL'),
      restart: async () => {
        due!();
        await new Promise((r) => setImmediate(r));
      },
      stop: () => supervisor.stop(),
    };
  }

  it('a generic InternalError waits briefly for the verdict: 503 when the exit is learnt meanwhile, 500 after the wait otherwise', async () => {
    const { kill, stop } = supervised();
    try {
      expect(awaitsEngineVerdict(gatewayLostPostgres())).toBe(true);
      expect(awaitsEngineVerdict(cutBulkWrite(gatewayLostPostgres()))).toBe(true);
      expect(awaitsEngineVerdict(new Error('a bug of ours'))).toBe(false);
      // nobody learns of an exit: the wait ends after maxMs, and the error stays a fault
      const started = Date.now();
      expect(await embeddedDatabaseVerdict(60, 10)).toBe(false);
      expect(Date.now() - started).toBeGreaterThanOrEqual(50);
      expect(mapError(gatewayLostPostgres()).status).toBe(500);
      // the exit is learnt while the error waits: 503
      setTimeout(kill, 20);
      expect(await embeddedDatabaseVerdict(2_000, 10)).toBe(true);
      expect(awaitsEngineVerdict(gatewayLostPostgres())).toBe(false);
      expect(mapError(gatewayLostPostgres()).status).toBe(503);
    } finally {
      stop();
    }
  });

  it('a generic InternalError is a fault (500) while the database runs', () => {
    expect(embeddedDatabaseRecovering()).toBe(false);
    expect(mapError(gatewayLostPostgres())).toMatchObject({ status: 500, internal: true });
    expect(mapError(cutBulkWrite(gatewayLostPostgres()))).toMatchObject({ status: 500, internal: true });
    // another server error (a bad query) stays what it was, whatever the database's state
    const badQuery = new mongo.MongoServerError({
      ok: 0,
      code: 2,
      codeName: 'BadValue',
      errmsg: '$regex has to be a string',
    });
    expect(mapError(badQuery).status).toBe(500);
  });

  it('is 503 as soon as the postmaster is dead, before this process has been told of its exit', () => {
    let postgresPid = process.pid; // alive
    const supervisor = new DocumentDbSupervisor(
      {
        down: () => [],
        repair: async () => undefined,
        onUnexpectedExit: () => undefined,
        get postgresPid() {
          return postgresPid;
        },
      },
      { log: () => undefined, onState: () => undefined, onGiveUp: () => undefined },
    );
    try {
      expect(mapError(gatewayLostPostgres()).status).toBe(500);
      // a child killed and not yet reaped (this process reaps it only when its event loop runs)
      const child = spawn('sleep', ['30']);
      postgresPid = child.pid!;
      process.kill(postgresPid, 'SIGKILL');
      const deadline = Date.now() + 5000;
      while (!/\) Z/.test(readFileSync(`/proc/${postgresPid}/stat`, 'utf8')) && Date.now() < deadline);
      expect(mapError(gatewayLostPostgres())).toMatchObject({ status: 503, code: 'transient' });
    } finally {
      supervisor.stop();
    }
    expect(mapError(gatewayLostPostgres()).status).toBe(500);
  });

  // (after this one the module remembers a recent restart: keep it after the tests that need none)
  it('the same error is 503 + Retry-After from the crash until a while after the restart', async () => {
    const engine = supervised();
    try {
      engine.kill();
      for (const err of [gatewayLostPostgres(), cutBulkWrite(gatewayLostPostgres())]) {
        expect(mapError(err)).toMatchObject({
          status: 503,
          code: 'transient',
          internal: false,
          headers: { 'Retry-After': '5' },
        });
      }
      const badQuery = new mongo.MongoServerError({ ok: 0, code: 2, codeName: 'BadValue', errmsg: 'bad' });
      expect(mapError(badQuery).status).toBe(500);
      await engine.restart();
      // back: connections the gateway pooled to the old PostgreSQL may still fail once
      expect(embeddedDatabaseRecovering()).toBe(true);
      expect(mapError(gatewayLostPostgres()).status).toBe(503);
      expect(embeddedDatabaseRecovering(Date.now() + AFTER_RESTART_MS)).toBe(false);
    } finally {
      engine.stop();
    }
    expect(embeddedDatabaseRecovering(Date.now() + AFTER_RESTART_MS)).toBe(false);
  });

  it("PostgreSQL's words for a server going away or not back yet are 503 at any time", () => {
    for (const errmsg of [
      'terminating connection due to administrator command',
      'FATAL: the database system is starting up',
      'the database system is in recovery mode',
      'connection to server on socket "/tmp/.s.PGSQL.9712" failed: Connection refused',
    ]) {
      const err = new mongo.MongoServerError({ ok: 0, code: 1, codeName: 'InternalError', errmsg });
      expect(mapError(err)).toMatchObject({ status: 503, code: 'transient', internal: false });
    }
  });
});
