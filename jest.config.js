// Two projects: unit specs beside the source (pure logic) and e2e specs in test/ against the real
// app and a real database started once by the global setup.
const tsJest = ['ts-jest', { diagnostics: false }];
const moduleNameMapper = {
  '^@app/fhir$': '<rootDir>/libs/fhir/src',
  '^@app/fhir/(.*)$': '<rootDir>/libs/fhir/src/$1',
  '^@app/testing$': '<rootDir>/test/support',
  '^@app/testing/(.*)$': '<rootDir>/test/support/$1',
};
const common = {
  rootDir: __dirname,
  testEnvironment: 'node',
  moduleFileExtensions: ['ts', 'js', 'json'],
  transform: { '^.+\\.ts$': tsJest },
  moduleNameMapper,
};
module.exports = {
  // a global option: jest ignores it inside a project
  testTimeout: 60000,
  projects: [
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/{src,libs}/**/*.spec.ts'] },
    {
      ...common,
      displayName: 'e2e',
      testMatch: ['<rootDir>/test/**/*.e2e-spec.ts'],
      // the cluster's own suites run with `npm run test:sharded` (jest.sharded.config.js)
      testPathIgnorePatterns: ['/node_modules/', '<rootDir>/test/sharded/'],
      globalSetup: '<rootDir>/test/global-setup.ts',
      globalTeardown: '<rootDir>/test/global-teardown.ts',
    },
  ],
};
