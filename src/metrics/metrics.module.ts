import { Global, MiddlewareConsumer, Module, NestModule } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { MetricsController } from './metrics.controller';
import { MetricsService } from './metrics.service';

@Global()
@Module({
  controllers: [MetricsController],
  providers: [MetricsService],
  exports: [MetricsService],
})
export class MetricsModule implements NestModule {
  constructor(private readonly metrics: MetricsService) {}

  configure(consumer: MiddlewareConsumer): void {
    if (!this.metrics.enabled) return;
    consumer
      .apply((req: Request, res: Response, next: NextFunction) => {
        const start = process.hrtime.bigint();
        res.once('finish', () => {
          // the route pattern (e.g. /:version/:type/:id), never the raw path: bounded label values
          const route = (req.route as { path?: string } | undefined)?.path ?? 'unmatched';
          this.metrics.observeRequest(
            req.method,
            route,
            res.statusCode,
            Number(process.hrtime.bigint() - start) / 1e9,
          );
        });
        next();
      })
      .forRoutes('*path');
  }
}
