/** MongoDB's duplicate key error code (DocumentDB answers the same). */
export const DUPLICATE_KEY = 11000;

/** Whether a driver error, or one write error of a bulk write, is a duplicate key. */
export function isDuplicateKey(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === DUPLICATE_KEY;
}
