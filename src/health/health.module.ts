import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { DatabasePingIndicator } from './database-ping.indicator';
import { HealthController } from './health.controller';

@Module({
  imports: [TerminusModule.forRoot({ logger: false })],
  controllers: [HealthController],
  providers: [DatabasePingIndicator],
})
export class HealthModule {}
