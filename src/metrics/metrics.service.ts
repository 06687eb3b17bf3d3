import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import { InjectConnection } from '@nestjs/mongoose';
import type { Connection } from 'mongoose';
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { SETTINGS } from '../config/config.module';
import { Settings } from '../config/settings';

/**
 * Prometheus metrics: request count and latency by route and status, database
 * command latency, bulk export bytes. A registry of its own, so tests can build several apps.
 */
@Injectable()
export class MetricsService implements OnModuleInit {
  readonly registry = new Registry();
  readonly enabled: boolean;
  private readonly httpDuration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request latency by method, route pattern and status',
    labelNames: ['method', 'route', 'status'],
    buckets: [0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 30],
    registers: [this.registry],
  });
  private readonly dbDuration = new Histogram({
    name: 'db_command_duration_seconds',
    help: 'Database command latency by command name and outcome',
    labelNames: ['command', 'outcome'],
    buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.5, 2],
    registers: [this.registry],
  });
  private readonly exportBytes = new Counter({
    name: 'bulk_export_bytes_total',
    help: 'NDJSON bytes streamed by bulk export downloads',
    registers: [this.registry],
  });

  constructor(
    @Inject(SETTINGS) settings: Settings,
    @InjectConnection() private readonly connection: Connection,
  ) {
    this.enabled = settings.metricsEnabled;
  }

  onModuleInit(): void {
    if (!this.enabled) return;
    collectDefaultMetrics({ register: this.registry });
    // Command monitoring events of the driver: no extra round trip, only timing.
    const client = this.connection.getClient() as any;
    client.on('commandSucceeded', (e: { commandName: string; duration: number }) =>
      this.dbDuration.observe({ command: e.commandName, outcome: 'ok' }, e.duration / 1000),
    );
    client.on('commandFailed', (e: { commandName: string; duration: number }) =>
      this.dbDuration.observe({ command: e.commandName, outcome: 'error' }, e.duration / 1000),
    );
  }

  observeRequest(method: string, route: string, status: number, seconds: number): void {
    if (this.enabled) this.httpDuration.observe({ method, route, status: String(status) }, seconds);
  }

  addExportBytes(bytes: number): void {
    if (this.enabled) this.exportBytes.inc(bytes);
  }
}
