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
