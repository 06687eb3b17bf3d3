/**
 * `handling=strict|lenient` of the `Prefer` header for unknown search parameters
 * (https://hl7.org/fhir/R4/search.html#errors); `return=` is the reply presenter's
 * (fhir-http/reply-presenter.ts).
 */
export function isLenientHandling(prefer: string | undefined): boolean {
  return /(?:^|[,;\s])handling\s*=\s*lenient\b/i.test(prefer ?? '');
}
