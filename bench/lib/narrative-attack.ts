/**
 * The deep-narrative attack (docs/security.md "Event loop"): a Patient whose `text.div` nests
 * 32,000 `<b>` (224 KB) sent to `$validate`, which a read-only token may call. The narrative check
 * once cost n² in the nesting (23 s of blocked event loop per request); it now stops at the depth
 * limit, so the request costs about what parsing its JSON costs.
 */
export const NARRATIVE_NESTING = 32_000;

export function deepNarrativePatient(levels = NARRATIVE_NESTING): string {
  const div = `<div xmlns="http://www.w3.org/1999/xhtml">${'<b>'.repeat(levels)}x${'</b>'.repeat(levels)}</div>`;
  return JSON.stringify({ resourceType: 'Patient', text: { status: 'generated', div } });
}

/** The request the attack loops: method, path and body for the bench's HTTP helper. */
export function narrativeAttackRequest(): {
  method: 'POST';
  path: string;
  body: string;
  contentType: string;
} {
  return {
    method: 'POST',
    path: '/r4/Patient/$validate',
    body: deepNarrativePatient(),
    contentType: 'application/fhir+json',
  };
}

/**
 * A legal narrative of about 1 MB (MAX_RESOURCE_BYTES by default): 125,000 paragraphs. Checked in one
 * piece it held the event loop ~0.2–0.5 s per request; it is now parsed in slices.
 */
export function largeNarrativeRequest(): { method: 'POST'; path: string; body: string; contentType: string } {
  const div = `<div xmlns="http://www.w3.org/1999/xhtml">${'<p>x</p>'.repeat(125_000)}</div>`;
  return {
    method: 'POST',
    path: '/r4/Patient/$validate',
    body: JSON.stringify({ resourceType: 'Patient', text: { status: 'generated', div } }),
    contentType: 'application/fhir+json',
  };
}

/** A write flood's request: a transaction of 20 small Observations (many commands, little to send). */
export function transactionFloodRequest(): {
  method: 'POST';
  path: string;
  body: string;
  contentType: string;
} {
  return {
    method: 'POST',
    path: '/r4',
    body: JSON.stringify({
      resourceType: 'Bundle',
      type: 'transaction',
      entry: Array.from({ length: 20 }, (_, i) => ({
        resource: { resourceType: 'Observation', status: 'final', code: { text: `flood ${i}` } },
        request: { method: 'POST', url: 'Observation' },
      })),
    }),
    contentType: 'application/fhir+json',
  };
}
