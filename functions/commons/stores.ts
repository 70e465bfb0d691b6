import { ENV } from '../../lib/topology';
import { DynamoClockStore, DynamoTaskStore } from '../adapters/dynamo-store';
import { dynamo } from './clients';
import { integerEnv, requireEnv } from './config';

/** The table, its bucket and shard counts, and the stores over it: what every function but the ticker needs. */
export function tableFromEnv(env: NodeJS.ProcessEnv = process.env) {
  const tableName = requireEnv(ENV.tableName, env);
  const bucketCount = integerEnv(ENV.bucketCount, env);
  const shardCount = integerEnv(ENV.shardCount, env);
  if (bucketCount < 1) throw new Error(`Environment variable ${ENV.bucketCount} must be at least 1`);
  if (shardCount < 1) throw new Error(`Environment variable ${ENV.shardCount} must be at least 1`);
  return {
    bucketCount,
    shardCount,
    taskStore: new DynamoTaskStore({ client: dynamo, tableName, bucketCount }),
    clockStore: new DynamoClockStore({ client: dynamo, tableName }),
  };
}
