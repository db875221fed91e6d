/** Deletes every key matching one of the glob patterns; quietly does nothing when Redis does not answer. */
export function deleteRedisKeys(url: string, patterns: string[]): Promise<void>;
