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

  it('keeps other errors internal (500) without their message', () => {
    const mapped = mapError(new Error('boom: secret detail'));
    expect(mapped.status).toBe(500);
    expect(mapped.message).not.toContain('secret detail');
  });
});
