import type { Request } from 'express';
import {
  fhirBodyGuard,
  fhirStringProblem,
  firstBadNode,
  identifierProblem,
  verifyUtf8,
} from './body-hygiene';

describe('body hygiene', () => {
  it('verifyUtf8 refuses bytes that are not UTF-8, and only for a UTF-8 body', () => {
    const verify =
      (bytes: number[], encoding = 'utf-8') =>
      () =>
        verifyUtf8({} as never, {}, Buffer.from(bytes), encoding);
    expect(verify([0x7b, 0xff, 0x7d])).toThrow(/not valid UTF-8/);
    expect(verify([0xed, 0xa0, 0x80])).toThrow(/not valid UTF-8/); // an encoded surrogate
    expect(verify([0xc3, 0xbc])).not.toThrow(); // ü
    expect(verify([0xff, 0xfe], 'utf-16le')).not.toThrow();
  });

  it('FHIR strings: controls below U+0020 but tab, CR, LF; lone surrogates', () => {
    expect(fhirStringProblem('a\tb\r\nc 😀')).toBeUndefined();
    expect(fhirStringProblem('a\u0000')).toMatch(/U\+0000 at position 1/);
    expect(fhirStringProblem('\u001b[31m')).toMatch(/U\+001B/);
    expect(fhirStringProblem('x\ud800')).toMatch(/lone/);
    expect(fhirStringProblem('\udc00x')).toMatch(/lone/);
    expect(identifierProblem('a\tb')).toMatch(/U\+0009/);
    expect(identifierProblem('a\u007f')).toMatch(/U\+007F/);
    expect(identifierProblem('ordinary ü')).toBeUndefined();
  });

  it('firstBadNode names the first bad value or property name by its path, at any depth', () => {
    expect(firstBadNode({ a: [{ b: 'ok' }], c: 'fine' }, 'Patient')).toBeUndefined();
    expect(firstBadNode({ a: [{ b: 'ok' }, { b: 'x\u0001' }] }, 'Patient')).toEqual({
      path: 'Patient.a[1].b',
      problem: expect.stringMatching(/U\+0001/),
    });
    expect(firstBadNode({ ['k\u0002']: 1 }, '$')?.path).toBe('$ (a property name)');
    let deep: unknown = 'x\u0000';
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(firstBadNode(deep, '$')?.problem).toMatch(/U\+0000/);
  });

  it('firstBadNode refuses an array over the limit, by its path', () => {
    expect(firstBadNode({ name: [{ given: ['a', 'b', 'c'] }] }, 'Patient', 3)).toBeUndefined();
    expect(firstBadNode({ name: [{ given: ['a', 'b', 'c', 'd'] }] }, 'Patient', 3)).toEqual({
      path: 'Patient.name[0].given',
      problem: expect.stringMatching(/repeats 4 times; at most 3/),
    });
  });

  it('fhirBodyGuard: a Bundle entry over MAX_RESOURCE_BYTES → 413 naming it, measured only when the body is larger', () => {
    const guard = fhirBodyGuard({ maxResourceBytes: 100, maxArrayLength: 10 });
    const outcome = (body: object, contentLength?: number): unknown => {
      const headers = contentLength === undefined ? {} : { 'content-length': String(contentLength) };
      let passed: unknown = 'not called';
      guard(
        { body, path: '/r4', headers } as unknown as Request,
        {} as never,
        (err?: unknown) => (passed = err),
      );
      return passed;
    };
    const entry = (text: string) => ({ resource: { resourceType: 'Basic', code: { text } } });
    const small = { resourceType: 'Bundle', type: 'batch', entry: [entry('a'), entry('b')] };
    const bulky = { resourceType: 'Bundle', type: 'batch', entry: [entry('a'), entry('x'.repeat(100))] };
    expect(outcome(small, JSON.stringify(small).length)).toBeUndefined();
    // a body over the limit whose entries are each within it passes
    const many = { ...small, entry: Array.from({ length: 8 }, () => entry('a')) };
    expect(JSON.stringify(many).length).toBeGreaterThan(100);
    expect(outcome(many, JSON.stringify(many).length)).toBeUndefined();
    for (const length of [JSON.stringify(bulky).length, undefined]) {
      const refused = outcome(bulky, length) as { status?: number; message?: string };
      expect(refused.status).toBe(413);
      expect(refused.message).toMatch(/^Bundle\.entry\[1\]\.resource is \d+ bytes/);
    }
    // a bad string in an entry is refused whatever the size
    const control = { ...small, entry: [entry('a\u0001')] };
    expect((outcome(control, JSON.stringify(control).length) as { status?: number }).status).toBe(400);
  });
});
