// Types of scripts/native-addon.mjs, for its test.

/** The ABI (NODE_MODULE_VERSION) a mismatched addon was built for, from Node's dlopen error. */
export function builtFor(message: string): string | undefined;
/** The runtime's prefix when its own-version headers sit beside it (`<prefix>/include/node`), else undefined. */
export function ownHeaders(execPath?: string, version?: string): string | undefined;
