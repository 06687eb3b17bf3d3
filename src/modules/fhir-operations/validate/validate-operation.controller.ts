import { Body, Controller, HttpCode, Param, Post, Res } from '@nestjs/common';
import { ApiBody, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import {
  fhirJsonType,
  OperationOutcomeError,
  outcomeIn,
  parseFhirVersion,
  type FhirVersion,
  type OperationOutcome,
} from '@app/fhir';
import { UseTenant } from '../../../tenancy';
import { FhirOperation } from '../operation-registry';
import { ValidateOperationService } from './validate-operation.service';

@ApiTags('FHIR operations')
@FhirOperation({
  name: 'validate',
  levels: ['type', 'instance'],
  definition: 'http://hl7.org/fhir/OperationDefinition/Resource-validate',
  description: 'Validates a resource against the base specification of the version; stores nothing.',
})
// $validate stores nothing: a read-only token may use it
@UseTenant({ readRoute: true })
@Controller()
export class ValidateOperationController {
  constructor(private readonly service: ValidateOperationService) {}

  @Post(':version/:type/$validate')
  @HttpCode(200)
  @ApiOperation({ summary: 'Validate a resource (type level)' })
  @ApiParam({ name: 'version', enum: ['r4', 'stu3', 'dstu2'] })
  @ApiBody({ description: 'The resource, or a Parameters resource with resource/mode/profile' })
  @ApiOkResponse({ description: 'OperationOutcome with every issue found (information when valid)' })
  validateType(
    @Param('version') v: string,
    @Param('type') type: string,
    @Body() body: unknown,
    @Res() res: Response,
  ) {
    this.send(res, this.version(v), this.service.validate(this.version(v), type, body));
  }

  @Post(':version/:type/:id/$validate')
  @HttpCode(200)
  @ApiOperation({ summary: 'Validate a resource for an update of this id (instance level)' })
  @ApiParam({ name: 'version', enum: ['r4', 'stu3', 'dstu2'] })
  validateInstance(
    @Param('version') v: string,
    @Param('type') type: string,
    @Param('id') id: string,
    @Body() body: unknown,
    @Res() res: Response,
  ) {
    this.send(res, this.version(v), this.service.validate(this.version(v), type, body, id));
  }

  private version(segment: string) {
    const v = parseFhirVersion(segment);
    if (!v) throw OperationOutcomeError.notFound(`unknown FHIR version "${segment}"`);
    return v;
  }

  private send(res: Response, version: FhirVersion, outcome: OperationOutcome): void {
    res
      .status(200)
      .type(`${fhirJsonType(version)}; charset=utf-8`)
      .send(JSON.stringify(outcomeIn(version, outcome)));
  }
}
