import { mongo } from 'mongoose';
import { storedJsonBytes } from './stored-json-bytes';

const raw = (doc: Record<string, unknown>) => mongo.BSON.serialize(doc);

describe('storedJsonBytes', () => {
  it('returns the stored UTF-8 bytes of `json` as they are (multi-byte characters too)', () => {
    const json = JSON.stringify({ resourceType: 'Patient', name: [{ family: 'Ólafsdóttir 𝔸' }] });
    const bytes = storedJsonBytes(raw({ json }));
    expect(Buffer.from(bytes!).toString('utf8')).toBe(json);
  });

  it('is a view of the document, not a copy, on the projection layout', () => {
    const doc = raw({ json: '{"a":1}' });
    const bytes = storedJsonBytes(doc)!;
    expect(bytes.buffer).toBe(doc.buffer);
  });

  it('a tombstone (json null) and a document without json give null', () => {
    expect(storedJsonBytes(raw({ json: null }))).toBeNull();
    expect(storedJsonBytes(raw({}))).toBeNull();
  });

  it('decodes any other layout (extra fields, other order) through the BSON library', () => {
    expect(Buffer.from(storedJsonBytes(raw({ _id: 'k', json: '{"b":2}' }))!).toString()).toBe('{"b":2}');
    expect(Buffer.from(storedJsonBytes(raw({ json: '{"c":3}', vid: 2 }))!).toString()).toBe('{"c":3}');
    expect(storedJsonBytes(raw({ json: 42 }))).toBeNull();
  });

  it('works on a document that is a slice of a larger reply buffer', () => {
    const doc = raw({ json: '{"d":4}' });
    const reply = Buffer.concat([Buffer.from('prefix'), doc, Buffer.from('suffix')]);
    const slice = reply.subarray(6, 6 + doc.length);
    expect(Buffer.from(storedJsonBytes(slice)!).toString()).toBe('{"d":4}');
  });
});

describe('storedJsonBytes on damaged or unusual layouts', () => {
  it('a string length that does not match the document falls back to the BSON library', () => {
    const doc = Buffer.from(raw({ json: '{"e":5}' }));
    doc.writeInt32LE(1000, 4 + 1 + 5); // string length beyond the document
    expect(() => storedJsonBytes(doc)).toThrow();
  });

  it('an element named like json but longer (jsonx) is not taken for json', () => {
    expect(storedJsonBytes(raw({ jsonx: '{"f":6}' }))).toBeNull();
  });

  it('accepts a plain Uint8Array (not a Buffer) and returns a view of it', () => {
    const doc = new Uint8Array(raw({ json: '{"g":7}' }));
    const bytes = storedJsonBytes(doc)!;
    expect(bytes.buffer).toBe(doc.buffer);
    expect(Buffer.from(bytes).toString()).toBe('{"g":7}');
  });
});
