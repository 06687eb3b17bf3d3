export * from './test-app';
export * from './factories';
