export { type AclCheck, type AclResult, compileAcl } from './acl.js';
export { controlChannelUrl, loggableUrl, ReplicaRotation } from './api-urls.js';
export { BackendGuard, type BackendGuardOptions } from './backend-guard.js';
export { expandSavedBackendSets, resolveBackendSets } from './backend-sets.js';
export { reconnectDelay } from './backoff.js';
export {
  BIND_RETRY_BASE_MS,
  BIND_RETRY_CAP_MS,
  type BindAttempt,
  BindRetries,
  type BindRetryOptions,
  bindFailureReason,
} from './bind-retry.js';
export { ChannelEnvProperties, channelModeProblem } from './channel-env.js';
export {
  type ChannelLogger,
  ControlChannelClient,
  type ControlChannelOptions,
  type SnapshotChange,
} from './control-channel.js';
export { applyListenerDelta } from './delta.js';
export { checkEnvelope, type SplitListeners, splitListeners } from './listener-split.js';
export { type LoadMetricNames, LoadSampler } from './load-sampler.js';
export { type NodeConfigResult, NodeEnvProperties, parseNodeConfig } from './node-config.js';
export {
  CREDENTIAL_FILE,
  loadCredential,
  NodeCredential,
  resolveCredential,
  saveCredential,
} from './node-credential.js';
export {
  encodeProxyV1,
  encodeProxyV2,
  type ParseResult,
  PROXY_V1_MAX_LENGTH,
  PROXY_V2_FIXED_LENGTH,
  PROXY_V2_MAX_PAYLOAD,
  PROXY_V2_SIGNATURE,
  type ProxyAddresses,
  type ProxyEndpoints,
  type ProxyHeader,
  type ProxyTransport,
  parseFixedPart,
  parseProxyV1,
  parseProxyV2,
  readProxyHeader,
  unmapV4,
} from './proxy-protocol.js';
export { ReadBuffer, SMALL_READS_TO_SHRINK } from './read-buffer.js';
export {
  type ChannelSource,
  EXIT_BAD_CONFIG,
  EXIT_CANNOT_JOIN,
  FILE_CHANGED,
  type FileSource,
  type LoadedSnapshot,
  type NodeProcess,
  type ReloadResult,
  type RunNodeLogger,
  type RunNodeOptions,
  type RunningNode,
  runNode,
} from './run-node.js';
export {
  detectRuntimeCapabilities,
  type MissingCapability,
  missingCapabilities,
  probeReusePort,
  type RuntimeCapabilities,
  reusePortByVersion,
} from './runtime-capabilities.js';
export { type RuntimeLogger, reportRuntime } from './runtime-report.js';
export {
  SessionSync,
  type SessionSyncOptions,
  type SyncChannel,
  type SyncEntry,
  type SyncKind,
  type SyncLogger,
  type SyncScope,
  type SyncTarget,
} from './session-sync.js';
export { type SessionSyncEnv, sessionSyncFromEnv } from './session-sync-env.js';
export { DEFAULT_SLICE_MS, Slicer } from './slicer.js';
export { loadSavedSnapshot, saveSnapshot } from './state-file.js';
export { sealKeyOf } from './state-seal.js';
export { loadTcpWrap, type Req, type SocketAddress, type TcpHandle, type TcpWrap, uvError } from './tcp-wrap.js';
export {
  ListenerTraffic,
  sumReports,
  TrafficReporter,
  type TrafficReporterOptions,
  TrafficTally,
} from './traffic-tally.js';
