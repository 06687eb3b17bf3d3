import request from 'supertest';
import type { TestApp } from './test-app';

/** Path and query of an absolute link the server wrote (links carry BASE_URL). */
export function linkPath(url: string): string {
  const parsed = new URL(url);
  return `${parsed.pathname}${parsed.search}`;
}

/** Every page of a paged answer (at most `max`), following `next` links as a client does; each must be 200. */
export async function followPages(
  t: TestApp,
  headers: Record<string, string>,
  first: string,
  max = 20,
): Promise<any[]> {
  const pages: any[] = [];
  let path: string | undefined = first;
  while (path && pages.length < max) {
    const res: request.Response = await request(t.server).get(path).set(headers).expect(200);
    pages.push(res.body);
    const next = (res.body.link as Array<{ relation: string; url: string }>).find(
      (l) => l.relation === 'next',
    );
    path = next ? linkPath(next.url) : undefined;
  }
  return pages;
}
