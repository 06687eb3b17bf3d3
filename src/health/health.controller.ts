import { Controller, Get, HttpCode } from '@nestjs/common';
import { ApiOkResponse, ApiServiceUnavailableResponse, ApiTags } from '@nestjs/swagger';
import { OperationOutcomeError } from '@app/fhir';
import { DatabaseReadCheck } from './database-read.check';

@ApiTags('health')
@Controller('health')
export class HealthController {
  constructor(private readonly database: DatabaseReadCheck) {}

  /**
   * 200 `{status:"ok"}` when the database serves a read within DB_TIMEOUT_MS / 4; 503 otherwise
   * (the documented health contract). The cause is logged by the check, not sent: it may name hosts.
   */
  @Get()
  @HttpCode(200)
  @ApiOkResponse({ schema: { example: { status: 'ok' } } })
  @ApiServiceUnavailableResponse({
    schema: { example: { error: 'service_unavailable', message: 'database: down' } },
  })
  async check(): Promise<{ status: 'ok' }> {
    const problem = await this.database.problem();
    // an expected answer, not a server fault: the error filter logs it without a stack
    if (problem) {
      const down = new OperationOutcomeError('transient', 'database: down', {
        status: 503,
        headers: { 'Retry-After': '1' },
      });
      // the request's log line names the underlying error (src/logging/loggable-error.ts)
      throw Object.assign(down, { cause: problem });
    }
    return { status: 'ok' };
  }
}
