/** Asserts that an HTTP answer is an OperationOutcome whose first issue has this code (jest tests only). */
export function expectOutcome(
  res: { body: { resourceType?: unknown; issue?: Array<{ code?: unknown }> } },
  code: string,
): void {
  expect(res.body.resourceType).toBe('OperationOutcome');
  expect(res.body.issue?.[0]?.code).toBe(code);
}
