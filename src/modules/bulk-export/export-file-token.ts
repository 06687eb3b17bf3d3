import { createHmac, timingSafeEqual } from 'crypto';
import type { FhirVersion } from '@app/fhir';

/**
 * What one NDJSON file link stands for. Everything needed to serve the file is in the signed token,
 * so no per-export state is kept and any instance behind a load balancer can serve any file.
 * The payload is readable base64url JSON but opaque to clients by contract.
 */
export interface ExportFileClaims {
  /** FHIR version of the store. */
  v: FhirVersion;
  /** client_id of the owning client. */
  c: string;
  /** service_user_id in scope; null = every user of the client. */
  u: number | null;
  /** resourceType of the file (one type per file). */
  t: string;
  /** `_since` in epoch ms (exclusive lower bound on lastUpdated), or null. */
  since: number | null;
  /** transactionTime in epoch ms: resources updated later are left out. */
  tt: number;
  /** Lower `_id` bound of the file's key range (inclusive when `b` is 'half-open', else exclusive); null = from the first key. */
  from: string | null;
  /** Upper `_id` bound (exclusive when `b` is 'half-open', else inclusive); null = up to the last key. */
  to: string | null;
  /** 'half-open': [from, to) (plans cut at key prefixes); absent: (from, to] (links signed before). */
  b?: 'half-open';
  /** Group export: the Group's logical id and the versionId its member list was read at. */
  g?: { id: string; vid: number };
  /** `patient` kick-off parameter: only these patients' compartments (Patient and Group exports). */
  p?: string[];
  /** 'patient': a Patient export, only resources in some Patient's compartment. */
  k?: 'patient';
  /** Expiry, epoch seconds. */
  exp: number;
}

export type FileTokenCheck =
  { ok: true; claims: ExportFileClaims } | { ok: false; reason: 'malformed' | 'bad-signature' | 'expired' };

const FORMAT = 1;

function mac(key: Buffer, payload: string): Buffer {
  return createHmac('sha256', key).update(payload).digest();
}

/** `base64url(JSON payload) . base64url(HMAC-SHA256(payload))`. */
export function signFileToken(key: Buffer, claims: ExportFileClaims): string {
  const payload = Buffer.from(JSON.stringify({ f: FORMAT, ...claims })).toString('base64url');
  return `${payload}.${mac(key, payload).toString('base64url')}`;
}

function isClaims(x: unknown): x is ExportFileClaims & { f: number } {
  if (typeof x !== 'object' || x === null) return false;
  const o = x as Record<string, unknown>;
  const nullableString = (v: unknown) => v === null || typeof v === 'string';
  const group = o.g;
  return (
    o.f === FORMAT &&
    (o.v === 'r4' || o.v === 'stu3' || o.v === 'dstu2') &&
    typeof o.c === 'string' &&
    (o.u === null || Number.isSafeInteger(o.u)) &&
    typeof o.t === 'string' &&
    (o.since === null || Number.isFinite(o.since)) &&
    Number.isFinite(o.tt) &&
    nullableString(o.from) &&
    nullableString(o.to) &&
    (o.b === undefined || o.b === 'half-open') &&
    (o.k === undefined || o.k === 'patient') &&
    Number.isFinite(o.exp) &&
    (o.p === undefined || (Array.isArray(o.p) && o.p.every((id) => typeof id === 'string'))) &&
    (group === undefined ||
      (typeof group === 'object' &&
        group !== null &&
        typeof (group as Record<string, unknown>).id === 'string' &&
        Number.isSafeInteger((group as Record<string, unknown>).vid)))
  );
}

/**
 * Verifies the signature in constant time before looking at the payload, then the expiry.
 * `nowSeconds` is injectable for tests.
 */
export function verifyFileToken(key: Buffer, token: string, nowSeconds = Date.now() / 1000): FileTokenCheck {
  const parts = token.split('.');
  if (parts.length !== 2 || !/^[A-Za-z0-9_-]+$/.test(parts[0]) || !/^[A-Za-z0-9_-]+$/.test(parts[1])) {
    return { ok: false, reason: 'malformed' };
  }
  // Compared as canonical text: base64url's unused low bits of the last character would otherwise
  // let several spellings of one signature pass.
  const expected = Buffer.from(mac(key, parts[0]).toString('base64url'));
  const given = Buffer.from(parts[1]);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    return { ok: false, reason: 'bad-signature' };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(parts[0], 'base64url').toString('utf8'));
  } catch {
    return { ok: false, reason: 'malformed' };
  }
  if (!isClaims(parsed)) return { ok: false, reason: 'malformed' };
  if (parsed.exp <= nowSeconds) return { ok: false, reason: 'expired' };
  const { f: _format, ...claims } = parsed;
  return { ok: true, claims };
}
