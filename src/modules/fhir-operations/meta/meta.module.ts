import { Module } from '@nestjs/common';
import { FhirStoreModule } from '../../fhir-store/fhir-store.module';
import { MetaController } from './meta.controller';
import { MetaService } from './meta.service';

@Module({
  imports: [FhirStoreModule],
  controllers: [MetaController],
  providers: [MetaService],
})
export class MetaModule {}
