import { Controller, Get, HttpCode, ServiceUnavailableException } from '@nestjs/common';
import { ApiOkResponse, ApiServiceUnavailableResponse, ApiTags } from '@nestjs/swagger';
import { HealthCheckService } from '@nestjs/terminus';
import { DatabasePingIndicator } from './database-ping.indicator';

@ApiTags('health')
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly database: DatabasePingIndicator,
  ) {}

  /** 200 `{status:"ok"}` once the database answers a ping; 503 otherwise (DESIGN.md §1). */
  @Get()
  @HttpCode(200)
  @ApiOkResponse({ schema: { example: { status: 'ok' } } })
  @ApiServiceUnavailableResponse({
    schema: { example: { error: 'service_unavailable', message: 'database: down' } },
  })
  async check(): Promise<{ status: 'ok' }> {
    try {
      await this.health.check([() => this.database.ping('database', 1500)]);
      return { status: 'ok' };
    } catch {
      throw new ServiceUnavailableException('database: down');
    }
  }
}
