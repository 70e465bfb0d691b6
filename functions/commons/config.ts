import type { EnvName } from '../contract/topology.js';

/**
 * Reads settings once per cold start and fails fast, naming the variable, so a
 * misconfigured function breaks at deploy-time smoke tests instead of mid-delivery.
 */
export function requireEnv(name: EnvName, env: NodeJS.ProcessEnv = process.env): string {
  const value = env[name];
  if (value === undefined || value === '') {
    throw new Error(`Environment variable ${name} is not set; the stack (or the local runtime) must provide it`);
  }
  return value;
}

export function integerEnv(name: EnvName, env: NodeJS.ProcessEnv = process.env): number {
  const text = requireEnv(name, env);
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new Error(`Environment variable ${name} must be a non-negative integer, got "${text}"`);
  }
  return value;
}

export function booleanEnv(name: EnvName, env: NodeJS.ProcessEnv = process.env): boolean {
  const text = requireEnv(name, env);
  if (text !== 'true' && text !== 'false') {
    throw new Error(`Environment variable ${name} must be "true" or "false", got "${text}"`);
  }
  return text === 'true';
}
