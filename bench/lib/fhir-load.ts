import { httpJson } from './bench-server';

/**
 * Loading helpers for benchmarks: a JSON fetch, and resources stored through `POST /r4` as
 * transaction Bundles of at most 20 PUT entries (ids chosen client-side, docs/api.md §5), a few at a time.
 */
export async function call(url: string, init: RequestInit): Promise<{ status: number; body: any }> {
  const res = await fetch(url, init);
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

export async function loadInBundles(
  baseUrl: string,
  token: string,
  resources: Array<Record<string, unknown>>,
  label: string,
  concurrency = 4,
): Promise<void> {
  const chunks: Array<Array<Record<string, unknown>>> = [];
  for (let i = 0; i < resources.length; i += 20) chunks.push(resources.slice(i, i + 20));
  let next = 0;
  let done = 0;
  const worker = async (): Promise<void> => {
    while (next < chunks.length) {
      const entry = chunks[next++].map((resource) => ({
        resource,
        request: { method: 'PUT', url: `${String(resource.resourceType)}/${String(resource.id)}` },
      }));
      const res = await call(`${baseUrl}/r4`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/fhir+json' },
        body: JSON.stringify({ resourceType: 'Bundle', type: 'transaction', entry }),
      });
      if (res.status !== 200)
        throw new Error(`bundle failed: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
      if (++done % 50 === 0 || done === chunks.length)
        process.stderr.write(`\r${label}: ${done}/${chunks.length} bundles`);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  process.stderr.write('\n');
}

/** A transaction Bundle that PUTs each resource at its own id (an upsert: any split loads in any order). */
export function putTransaction(resources: ReadonlyArray<Record<string, unknown>>): Record<string, unknown> {
  return {
    resourceType: 'Bundle',
    type: 'transaction',
    entry: resources.map((resource) => ({
      resource,
      request: { method: 'PUT', url: `${String(resource.resourceType)}/${String(resource.id)}` },
    })),
  };
}

/**
 * POSTs `putTransaction(resources)` to a FHIR base. PUT at a chosen id is idempotent, so a
 * transaction the server gave up on (503: e.g. its database deadline on a loaded machine) is sent
 * again, at most three times; `retries` says how often.
 */
export async function postPutTransaction(
  base: string,
  resources: ReadonlyArray<Record<string, unknown>>,
  headers: Record<string, string>,
): Promise<{ status: number; body: any; retries: number }> {
  const bundle = putTransaction(resources);
  let res = await httpJson(base, 'POST', '', bundle, headers);
  let retries = 0;
  for (; res.status === 503 && retries < 3; retries++) {
    await new Promise((r) => setTimeout(r, 500));
    res = await httpJson(base, 'POST', '', bundle, headers);
  }
  return { ...res, retries };
}
