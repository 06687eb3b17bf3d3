import autocannon from 'autocannon';

/** One fixed-duration load of GET requests at a fixed number of connections (autocannon). */
export interface HttpLoad {
  /** Origin, e.g. http://127.0.0.1:8080 */
  origin: string;
  /** Request paths (with the base path and query); each connection cycles through them. */
  paths: readonly string[];
  connections: number;
  seconds: number;
  headers?: Record<string, string>;
}

export interface HttpLoadResult {
  requests: number;
  perSecond: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
}

export async function runHttpLoad(load: HttpLoad): Promise<HttpLoadResult> {
  const result = await autocannon({
    url: load.origin,
    connections: load.connections,
    duration: load.seconds,
    headers: { Accept: 'application/fhir+json', ...load.headers },
    requests: load.paths.map((path) => ({ method: 'GET', path })),
  });
  return {
    requests: result.requests.total,
    perSecond: result.requests.total / load.seconds,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
  };
}
