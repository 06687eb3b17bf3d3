import { Module } from '@nestjs/common';
import { ValidateOperationController } from './validate-operation.controller';
import { ValidateOperationService } from './validate-operation.service';

@Module({
  controllers: [ValidateOperationController],
  providers: [ValidateOperationService],
})
export class ValidateOperationModule {}
