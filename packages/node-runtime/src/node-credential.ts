import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { ENROLL_PATH, EnrollResponse } from '@slb/model';
import { reconnectDelay } from './backoff.js';

/** The node's own credential, kept in its state dir (mode 0600): who it is, and what it presents. */
export const NodeCredential = Type.Object({
  ...EnrollResponse.properties,
  /** SHA-256 of the join token this came from: a different token in the environment is a rotation. */
  joinTokenHash: Type.Optional(Type.String()),
});
export interface NodeCredential {
  nodeId: string;
  kind: 'l4' | 'l7';
  address: string;
  credential: string;
  joinTokenHash?: string;
}

export const CREDENTIAL_FILE = 'credential.json';

interface Logger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
}

export const tokenHash = (token: string) => createHash('sha256').update(token).digest('hex');

export async function loadCredential(stateDir: string): Promise<NodeCredential | null> {
  try {
    const value = JSON.parse(await readFile(join(stateDir, CREDENTIAL_FILE), 'utf8'));
    return Value.Check(NodeCredential, value) ? (value as NodeCredential) : null;
  } catch {
    return null;
  }
}

export async function saveCredential(stateDir: string, credential: NodeCredential): Promise<void> {
  await mkdir(stateDir, { recursive: true, mode: 0o700 });
  const tmp = join(stateDir, `${CREDENTIAL_FILE}.${process.pid}.tmp`);
  await writeFile(tmp, JSON.stringify(credential), { mode: 0o600 });
  await rename(tmp, join(stateDir, CREDENTIAL_FILE));
}

class Refused extends Error {}

/** One exchange of a join token; Refused when the control plane says no, other errors when it is unreachable. */
async function enrollOnce(apiUrl: string, joinToken: string): Promise<EnrollResponse> {
  const res = await fetch(`${apiUrl.replace(/\/$/, '')}${ENROLL_PATH}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${joinToken}` },
    signal: AbortSignal.timeout(5000),
  });
  if (res.status === 401) throw new Refused('the join token was refused (unknown, already used or expired)');
  if (!res.ok) throw new Error(`enrollment answered ${res.status}`);
  const body = await res.json();
  if (!Value.Check(EnrollResponse, body)) throw new Error('enrollment answer does not validate');
  return body;
}

/**
 * The credential to dial with. A join token not used before (none saved, or the saved one came from another
 * token: a rotation) is exchanged first, with each of `apiUrls` in turn until one answers (the replicas share
 * one database, so one refusal is every replica's), waiting with backoff after each round none answered; a
 * refused join token falls back to the saved credential if there is one. Null: nothing to present.
 */
export async function resolveCredential(options: {
  /** The control plane's replicas (SLB_API_URL), tried in order. */
  apiUrls: readonly string[];
  stateDir: string;
  kind: 'l4' | 'l7';
  joinToken?: string;
  logger: Logger;
  isClosed?: () => boolean;
}): Promise<NodeCredential | null> {
  const saved = await loadCredential(options.stateDir);
  const { joinToken } = options;
  if (!joinToken || saved?.joinTokenHash === tokenHash(joinToken)) return saved;
  for (let attempt = 0; !options.isClosed?.(); attempt++) {
    for (const apiUrl of options.apiUrls) {
      if (options.isClosed?.()) break;
      try {
        const enrolled = await enrollOnce(apiUrl, joinToken);
        if (enrolled.kind !== options.kind) {
          throw new Refused(`the join token is for an ${enrolled.kind} node, this is an ${options.kind} node`);
        }
        const credential: NodeCredential = { ...enrolled, joinTokenHash: tokenHash(joinToken) };
        await saveCredential(options.stateDir, credential);
        options.logger.info(
          { nodeId: enrolled.nodeId, address: enrolled.address, replica: options.apiUrls.indexOf(apiUrl) },
          'enrolled: credential saved',
        );
        return credential;
      } catch (err) {
        if (err instanceof Refused) {
          if (saved) {
            options.logger.warn({ reason: err.message }, 'join token refused; using the saved credential');
            return saved;
          }
          throw err;
        }
        options.logger.warn(
          { err: (err as Error).message, replica: options.apiUrls.indexOf(apiUrl) },
          'enrollment failed; retrying',
        );
      }
    }
    await new Promise((r) => setTimeout(r, reconnectDelay(attempt, 200, 3000)));
  }
  return saved;
}
