export { reconnectDelay } from './backoff.js';
export { type ChannelLogger, ControlChannelClient, type ControlChannelOptions } from './control-channel.js';
export { applyListenerDelta } from './delta.js';
export { loadSavedSnapshot, saveSnapshot } from './state-file.js';
