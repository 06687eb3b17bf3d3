/**
 * How often `target[method]` was called while `action` ran (the method is wrapped for that time
 * and restored after): what a test asks to show that a request never reached a step.
 */
export async function callsDuring<T>(
  target: object,
  method: string,
  action: () => Promise<T>,
): Promise<{ result: T; calls: number }> {
  const holder = target as Record<string, (...args: unknown[]) => unknown>;
  const own = Object.prototype.hasOwnProperty.call(holder, method);
  const original = holder[method];
  let calls = 0;
  holder[method] = function (this: unknown, ...args: unknown[]) {
    calls += 1;
    return original.apply(this, args);
  };
  try {
    return { result: await action(), calls };
  } finally {
    if (own) holder[method] = original;
    else delete holder[method];
  }
}
