import { Controller, Get, NotFoundException, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Response } from 'express';
import { MetricsService } from './metrics.service';

@ApiExcludeController()
@Controller('metrics')
export class MetricsController {
  constructor(private readonly metrics: MetricsService) {}

  /** Prometheus text format; 404 unless METRICS_ENABLED=true. */
  @Get()
  async scrape(@Res() res: Response): Promise<void> {
    if (!this.metrics.enabled) throw new NotFoundException('metrics are disabled (METRICS_ENABLED)');
    res.setHeader('Content-Type', this.metrics.registry.contentType);
    res.send(await this.metrics.registry.metrics());
  }
}
