export * from './keys';
export * from './reference-rewriting';
export * from './bundle-entries';
export * from './bundle-builders';
export * from './provenance';
export * from './resource-stamping';
export * from './content-negotiation';
export * from './capability-statement';
