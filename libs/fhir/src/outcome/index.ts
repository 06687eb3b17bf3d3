export * from './operation-outcome';
