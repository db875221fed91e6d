// Placeholder: the node config snapshot schema (control-channel vocabulary) is defined by the L4-node work.
export {};
