import { mongo } from 'mongoose';
import { mapError } from './error-mapping';

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
