import { httpJsonPolitely } from './bench-server';

/**
 * The attacks of bench/fairness.ts on the database's work (docs/security.md "Database work"), each
 * a GET the heavy tenant loops, honouring Retry-After:
 * - `everything-amplification`: `Patient/{id}/$everything?_count=1` of a Patient whose one
 *   Observation references FAIRNESS_EVERYTHING_PRACTITIONERS (60) Practitioners of 0.9 ×
 *   MAX_RESOURCE_BYTES each (before: ~55 MB read for a 3 KB page);
 * - `revinclude-fan-out`: `Patient?name=…&_count=100` with 60 × `_revinclude:iterate=*` over 200
 *   Patients in a `link` ring (before: 60 regex scans per level, 6-7 s, then 503);
 * - `slow-small-queries`: `Observation?_content=` with the most prefix alternatives a parameter may
 *   list (100; before the cap 1,476), over 1,000 Observations: slow, and an empty answer.
 */
export const DATABASE_ATTACKS = [
  'everything-amplification',
  'revinclude-fan-out',
  'slow-small-queries',
] as const;
export type DatabaseAttack = (typeof DATABASE_ATTACKS)[number];

const PRACTITIONERS = Number(process.env.FAIRNESS_EVERYTHING_PRACTITIONERS ?? 60);
const RING_PATIENTS = 200;
const OBSERVATIONS = 1000;
/** Entries of one posted Bundle (the server's limit). */
const BUNDLE_ENTRIES = 20;

type Auth = Record<string, string>;

async function send(baseUrl: string, method: string, path: string, body: unknown, auth: Auth): Promise<any> {
  const res = await httpJsonPolitely(baseUrl, method, path, body, auth);
  if (res.status >= 300)
    throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
  return res.body;
}

/** `entries` (batch entries) posted 20 at a time. */
async function postAll(baseUrl: string, auth: Auth, entries: readonly object[]): Promise<void> {
  for (let from = 0; from < entries.length; from += BUNDLE_ENTRIES) {
    const bundle = {
      resourceType: 'Bundle',
      type: 'batch',
      entry: entries.slice(from, from + BUNDLE_ENTRIES),
    };
    const answer = await send(baseUrl, 'POST', '/r4', bundle, auth);
    const failed = (answer.entry as Array<{ response: { status: string } }>).find(
      (entry) => !entry.response.status.startsWith('20'),
    );
    if (failed) throw new Error(`batch entry: ${JSON.stringify(failed).slice(0, 300)}`);
  }
}

const WORDS = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf', 'hotel'];

/**
 * Stores what the selected attacks need in the heavy tenant's store; returns the path each attack
 * loops.
 */
export async function seedDatabaseAttacks(
  baseUrl: string,
  auth: Auth,
  maxResourceBytes: number,
  selected: readonly string[],
): Promise<Record<DatabaseAttack, string>> {
  if (selected.includes('everything-amplification')) {
    const div = `<div xmlns="http://www.w3.org/1999/xhtml">${'p'.repeat(Math.floor(maxResourceBytes * 0.9))}</div>`;
    for (let i = 0; i < PRACTITIONERS; i++) {
      const id = `amp-${i}`;
      const practitioner = { resourceType: 'Practitioner', id, text: { status: 'generated', div } };
      await send(baseUrl, 'PUT', `/r4/Practitioner/${id}`, practitioner, {
        ...auth,
        Prefer: 'return=minimal',
      });
    }
    await send(baseUrl, 'PUT', '/r4/Patient/amp', { resourceType: 'Patient', id: 'amp' }, auth);
    const observation = {
      resourceType: 'Observation',
      id: 'amp',
      status: 'final',
      code: { text: 'amplified' },
      subject: { reference: 'Patient/amp' },
      performer: Array.from({ length: PRACTITIONERS }, (_, i) => ({ reference: `Practitioner/amp-${i}` })),
    };
    await send(baseUrl, 'PUT', '/r4/Observation/amp', observation, auth);
  }
  if (selected.includes('revinclude-fan-out')) {
    await postAll(
      baseUrl,
      auth,
      Array.from({ length: RING_PATIENTS }, (_, i) => ({
        resource: {
          resourceType: 'Patient',
          id: `ring-${i}`,
          name: [{ family: 'RingFan' }],
          link: [{ other: { reference: `Patient/ring-${(i + 1) % RING_PATIENTS}` }, type: 'seealso' }],
        },
        request: { method: 'PUT', url: `Patient/ring-${i}` },
      })),
    );
  }
  if (selected.includes('slow-small-queries')) {
    await postAll(
      baseUrl,
      auth,
      Array.from({ length: OBSERVATIONS }, (_, i) => ({
        resource: {
          resourceType: 'Observation',
          status: 'final',
          code: { text: `${WORDS[i % 8]} measurement ${i}` },
          note: [{ text: WORDS.map((word, j) => `${word}${(i + j) % 50}`).join(' ') }],
        },
        request: { method: 'POST', url: 'Observation' },
      })),
    );
  }
  const prefixes = Array.from({ length: 100 }, (_, i) => `zz${i}`).join(',');
  return {
    'everything-amplification': '/r4/Patient/amp/$everything?_count=1',
    'revinclude-fan-out': `/r4/Patient?name=RingFan&_count=100&${Array(60).fill('_revinclude:iterate=*').join('&')}`,
    'slow-small-queries': `/r4/Observation?_content=${prefixes}`,
  };
}
