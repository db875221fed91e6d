export type { Clock } from './clock.js';
export { systemClock } from './clock.js';
export type { HttpCodeClass, HttpProbeTarget } from './http.js';
export { HTTP_CODE_CLASSES, httpCodeClass, probeHttp } from './http.js';
export type { CheckOptions } from './probe.js';
export { probe } from './probe.js';
export type { CoarseReason } from './reason.js';
export { coarseReason } from './reason.js';
export type { ProbeOptions, ProbeResult } from './result.js';
export type {
  HealthCheckConfig,
  HealthCheckContext,
  HealthCheckSettings,
  HealthCheckType,
  ListenerProtocol,
} from './settings.js';
export { DEFAULT_HTTP_CODES, HEALTH_CHECK_LIMITS, probeKey, resolveHealthCheck } from './settings.js';
export type { CheckOutcome, HealthState, HealthStatus, HealthThresholds, HealthTransition } from './state.js';
export { initialHealthState, parseHealthState, recordResult } from './state.js';
export type { TcpProbeTarget } from './tcp.js';
export { probeTcp } from './tcp.js';
export type { UdpProbeTarget } from './udp.js';
export { probeUdp } from './udp.js';
