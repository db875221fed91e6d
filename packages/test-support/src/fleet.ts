/**
 * Real processes for end-to-end tests, by concern in ./fleet/: the built apps as processes, free ports,
 * polling, Redis isolation, the local cloud, and the backends, clients and load loops of its suite.
 * Tests import from here or from the module they need.
 */
export * from './fleet/backends.js';
export * from './fleet/clients.js';
export * from './fleet/eventually.js';
export * from './fleet/load.js';
export * from './fleet/local-cloud.js';
export * from './fleet/ports.js';
export * from './fleet/processes.js';
export * from './fleet/redis-env.js';
