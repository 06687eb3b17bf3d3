import request from 'supertest';
import { createTestApp, TestApp } from '@app/testing';

describe('metrics (e2e)', () => {
  let on: TestApp;
  let off: TestApp;
  beforeAll(async () => {
    on = await createTestApp({ METRICS_ENABLED: 'true' });
    off = await createTestApp();
  });
  afterAll(async () => {
    await on?.close();
    await off?.close();
  });

  it('serves Prometheus text with request and database metrics when enabled', async () => {
    await request(on.server).get('/health').expect(200);
    const res = await request(on.server).get('/metrics').expect(200);
    expect(res.headers['content-type']).toMatch(/text\/plain/);
    expect(res.text).toMatch(
      /http_request_duration_seconds_count\{method="GET",route="\/health",status="200"\} [1-9]/,
    );
    expect(res.text).toMatch(/db_command_duration_seconds_count\{command="find",outcome="ok"\} [1-9]/);
    expect(res.text).toContain('bulk_export_bytes_total');
  });

  it('is 404 when disabled', async () => {
    await request(off.server).get('/metrics').expect(404);
  });
});
