import { mongo } from 'mongoose';

const BSON_STRING = 0x02;
/** `json` as a BSON element name (C string). */
const JSON_NAME = Buffer.from('json\0', 'latin1');
/** int32 document size, element type, `json\0`, int32 string length. */
const STRING_START = 4 + 1 + JSON_NAME.length + 4;

function int32LE(bytes: Uint8Array, at: number): number {
  return bytes[at] | (bytes[at + 1] << 8) | (bytes[at + 2] << 16) | (bytes[at + 3] << 24);
}

function startsWithJsonElement(doc: Uint8Array): boolean {
  if (doc.length <= STRING_START || doc[4] !== BSON_STRING) return false;
  for (let i = 0; i < JSON_NAME.length; i += 1) if (doc[5 + i] !== JSON_NAME[i]) return false;
  return true;
}

/**
 * The UTF-8 bytes of the stored JSON in a raw BSON document read with the projection
 * `{_id: 0, json: 1}`, without decoding it into a JavaScript string and encoding it back: an
 * export file streams the bytes as they are stored. Null for a tombstone (`json: null`).
 *
 * The fast path reads the one-element layout that projection produces and returns one view of the
 * document (no copy, no other object: it runs once per exported resource, and every short-lived
 * object makes the server's young generation collect more often, measured); any other document
 * is decoded by the BSON library, so an engine that adds fields stays correct.
 */
export function storedJsonBytes(raw: Uint8Array): Uint8Array | null {
  if (startsWithJsonElement(raw)) {
    const length = int32LE(raw, STRING_START - 4); // counts the string's terminating NUL
    const end = STRING_START + length - 1;
    if (length >= 1 && raw.length === end + 2 && raw[end] === 0 && raw[end + 1] === 0) {
      return raw.subarray(STRING_START, end);
    }
  }
  const json: unknown = mongo.BSON.deserialize(raw).json;
  return typeof json === 'string' ? Buffer.from(json, 'utf8') : null;
}
