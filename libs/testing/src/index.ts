export * from './test-app';
export * from './factories';
export * from './server-process';
export * from './cli-runner';
export * from './outcome';
export * from './paging';
export * from './event-loop';
export * from './smart-launch';
