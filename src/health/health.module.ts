import { Module } from '@nestjs/common';
import { DatabaseReadCheck } from './database-read.check';
import { HealthController } from './health.controller';

@Module({
  controllers: [HealthController],
  providers: [DatabaseReadCheck],
})
export class HealthModule {}
