/**
 * `handling=strict|lenient` of the `Prefer` header for unknown search parameters
 * (https://hl7.org/fhir/R4/search.html#errors); `return=` is the reply presenter's.
 */

/** `Prefer: handling=strict` turns unknown parameters into a 400. */
export function isStrictHandling(prefer: string | undefined): boolean {
  return /(^|[,;\s])handling\s*=\s*strict\b/i.test(prefer ?? '');
}

/** `Prefer: handling=lenient`, asked for explicitly. */
export function isLenientHandling(prefer: string | undefined): boolean {
  return /(^|[,;\s])handling\s*=\s*lenient\b/i.test(prefer ?? '');
}
