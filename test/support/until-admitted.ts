import type { Response, Test } from 'supertest';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Sends a set-up request again after each 429, waiting what its Retry-After asks, as a well-behaved
 * client does. For tests with tight per-client shares: their clients are made concurrently, so the
 * work of making them (user creation, token issuance) may already be charged while the other client
 * contends, and a set-up write can meet that debt. The test's own assertions never go through this.
 */
export async function untilAdmitted(send: () => Test, attempts = 20): Promise<Response> {
  let res = await send();
  for (let attempt = 1; res.status === 429 && attempt < attempts; attempt++) {
    await sleep(Math.max(100, Number(res.headers['retry-after'] ?? 1) * 1000));
    res = await send();
  }
  return res;
}
