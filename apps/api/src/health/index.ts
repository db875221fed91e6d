export { HealthScheduler, type HealthSchedulerOptions, type SyncResult } from './scheduler.js';
export { HEALTH_SHARDS_DEFAULT, jobLeadMs, planShards, type ShardSchedule, slotOffset } from './shards.js';
export { type HealthPlan, planHealthChecks, type SkippedTarget } from './targets.js';
export { TransitionConsumer, type TransitionConsumerOptions, type TransitionStats } from './transitions.js';
