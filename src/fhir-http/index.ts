export * from './fhir-route-state';
export { FhirRoute } from './fhir-route.decorator';
export { FhirOperation } from './fhir-operation.decorator';
export type { FhirOperationDefinition, OperationLevel, OperationMethod } from './fhir-operation-definition';
export {
  FhirVersionParam,
  FhirTypeParam,
  FhirIdParam,
  FhirInstanceParam,
  type FhirInstance,
  FhirSearchParams,
  FhirResourceBody,
  FhirPatchBody,
} from './fhir-params';
export type { PatchDocument } from './patch-body';
export { OperationRegistry, type RegisteredOperation } from './operation-registry';
export { FhirHttpModule } from './fhir-http.module';
export { FhirExpressAdapter } from './fhir-express-adapter';
