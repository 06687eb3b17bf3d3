import { loggableError } from './loggable-error';

class MongoServerSelectionError extends Error {
  reason = { servers: ['a document that must not be logged'] };
}

describe('loggableError', () => {
  it('names the class and message, and what the error wraps', () => {
    const network = new Error('connect ECONNREFUSED 127.0.0.1:27017');
    network.name = 'MongoNetworkError';
    const err = new MongoServerSelectionError('connection refused', { cause: network });
    expect(loggableError(err)).toEqual({
      type: 'MongoServerSelectionError',
      detail: 'connection refused',
      cause: { type: 'MongoNetworkError', detail: 'connect ECONNREFUSED 127.0.0.1:27017' },
    });
  });

  it('keeps no stack, other properties, password in a URL, or long text', () => {
    const err = new Error(`failed on mongodb://fhir:s3cret@127.0.0.1:1/ ${'x'.repeat(1000)}`);
    const logged = loggableError(err);
    expect(JSON.stringify(logged)).not.toContain('s3cret');
    expect(logged.detail).toContain('mongodb://[redacted]@127.0.0.1:1/');
    expect(logged.detail.length).toBeLessThanOrEqual(300);
    expect(Object.keys(logged)).toEqual(['type', 'detail']);
    expect(JSON.stringify(loggableError(new MongoServerSelectionError('x')))).not.toContain('document');
  });

  it('describes a thrown non-error by its type only', () => {
    expect(loggableError('a body')).toEqual({ type: 'string', detail: '' });
  });
});
