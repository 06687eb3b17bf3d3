import { mongo } from 'mongoose';

const BSON_STRING = 0x02;
/** `json` as a BSON element name (C string). */
const JSON_NAME = Buffer.from('json\0', 'latin1');
/** int32 document size, element type, `json\0`, int32 string length. */
const STRING_START = 4 + 1 + JSON_NAME.length + 4;

/**
 * The UTF-8 bytes of the stored JSON in a raw BSON document read with the projection
 * `{_id: 0, json: 1}`, without decoding it into a JavaScript string and encoding it back: an
 * export file streams the bytes as they are stored. Null for a tombstone (`json: null`).
 *
 * The fast path reads the one-element layout that projection produces (a view, no copy); any
 * other document is decoded by the BSON library, so an engine that adds fields stays correct.
 */
export function storedJsonBytes(raw: Uint8Array): Uint8Array | null {
  const doc = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
  if (
    doc.length > STRING_START &&
    doc[4] === BSON_STRING &&
    doc.subarray(5, 5 + JSON_NAME.length).equals(JSON_NAME)
  ) {
    const length = doc.readInt32LE(STRING_START - 4); // counts the string's terminating NUL
    const end = STRING_START + length - 1;
    if (length >= 1 && doc.length === end + 2 && doc[end] === 0 && doc[end + 1] === 0) {
      return doc.subarray(STRING_START, end);
    }
  }
  const json: unknown = mongo.BSON.deserialize(doc).json;
  return typeof json === 'string' ? Buffer.from(json, 'utf8') : null;
}
