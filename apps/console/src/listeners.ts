import type { Schemas } from './api.js';

type Listener = Schemas['Listener'];

/** How the console names a listener everywhere (tables, notices, screen-reader labels): `https:443`. */
export const listenerName = (l: Pick<Listener, 'protocol' | 'port'>): string => `${l.protocol}:${l.port}`;

/** HTTP and HTTPS listeners have forwarding rules, request metrics and a health-check path; TCP and UDP do not. */
export const isWebProtocol = (protocol: string | undefined): boolean => protocol === 'http' || protocol === 'https';
