// `npm run test:sharded`: the e2e suites that exercise the store, on the DocumentDB distributed
// cluster (1 coordinator + 2 workers) with the store's collections sharded (docs/scaling.md says
// which suites run where and why). The rest of the e2e suites run on the single node (`npm test`).
const base = require('./jest.config.js');
const e2e = base.projects.find((p) => p.displayName === 'e2e');

// The cluster's own suites (routing, store shard, uniqueness races) and the suites of the store's
// sharded collections: reads, searches, tenancy, bundles, history, conditional, export and purge.
const clusterSuites = ['test/sharded/**/*.e2e-spec.ts'];
const storeSuites = [
  'test/fhir-store.e2e-spec.ts',
  'test/search-parameters.e2e-spec.ts',
  'test/search-results.e2e-spec.ts',
  'test/tenancy.e2e-spec.ts',
  'test/bundle.e2e-spec.ts',
  'test/bundle-writes.e2e-spec.ts',
  'test/history.e2e-spec.ts',
  'test/conditional.e2e-spec.ts',
  'test/bulk-export.e2e-spec.ts',
  'test/purge.e2e-spec.ts',
];
const onCluster = [...clusterSuites, ...storeSuites];

module.exports = {
  testTimeout: 120000,
  projects: [
    {
      ...e2e,
      displayName: 'sharded',
      testPathIgnorePatterns: ['/node_modules/'],
      testMatch: onCluster.map((path) => `<rootDir>/${path}`),
      // the e2e project leaves test/sharded/ out; here it is the point
      testPathIgnorePatterns: ['/node_modules/'],
      globalSetup: '<rootDir>/test/sharded/global-setup.ts',
      globalTeardown: '<rootDir>/test/sharded/global-teardown.ts',
    },
  ],
};
