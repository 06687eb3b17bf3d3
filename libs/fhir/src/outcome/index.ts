export * from './operation-outcome';
export * from './issue-codes';
