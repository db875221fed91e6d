import { TypeCompiler } from '@sinclair/typebox/compiler';
import { NodeMessage } from '@slb/model';
import type WebSocket from 'ws';

const checkNodeMessage = TypeCompiler.Compile(NodeMessage);

/** A frame from a node as the protocol has it, or why it is not one (said back to the node). */
export function parseNodeMessage(data: WebSocket.RawData, isBinary: boolean): NodeMessage | { invalid: string } {
  if (isBinary) return { invalid: 'binary messages are not part of the protocol' };
  let message: unknown;
  try {
    message = JSON.parse(data.toString());
  } catch {
    return { invalid: 'message is not JSON' };
  }
  if (!checkNodeMessage.Check(message)) {
    const first = checkNodeMessage.Errors(message).First();
    return { invalid: `invalid message at ${first?.path || '/'}: ${first?.message}` };
  }
  return message;
}
