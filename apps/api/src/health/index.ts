export { HealthScheduler, type HealthSchedulerOptions, type SyncResult } from './scheduler.js';
export { type HealthPlan, planHealthChecks, type SkippedTarget } from './targets.js';
export { TransitionConsumer, type TransitionConsumerOptions, type TransitionStats } from './transitions.js';
