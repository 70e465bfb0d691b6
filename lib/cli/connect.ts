/**
 * What a command talks to: the task table (tenant commands) or the HTTP API (task
 * commands), in AWS when told where, otherwise local mode's, found through its data folder.
 */
import { join, resolve } from 'node:path';

import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

import { DynamoTenantStore } from '../../functions/adapters/dynamo/tenant-store.js';
import { parseApiKey, type TenantStore } from '../../functions/core/tenants/tenants.js';
import { TimerClient } from '../client/client.js';
import { DEV_API_KEY_FILE, readKeyFile } from '../local/dev-tenant.js';
import { ensureLocalTaskTable, LOCAL_TABLE_NAME, localDynamoClients, startLocalDynamo } from '../local/dynamodb.js';
import { runningLocalEndpoints } from '../local/endpoints.js';
import { type OptionSpecs, UsageError } from './command.js';
import type { CliIo } from './io.js';

export const TABLE_OPTIONS = {
  table: {
    type: 'string',
    placeholder: 'NAME',
    description:
      "The stack output TableName, used with your AWS credentials (default: TIMER_TABLE_NAME, else local mode's table)",
  },
  region: {
    type: 'string',
    placeholder: 'REGION',
    description: "The table's AWS region (default: AWS_REGION or your profile's)",
  },
} as const satisfies OptionSpecs;

export const API_OPTIONS = {
  'api-url': {
    type: 'string',
    placeholder: 'URL',
    description: "The API's base URL, the stack output ApiUrl or FunctionUrl (default: TIMER_URL, else local mode's)",
  },
  'api-key': {
    type: 'string',
    placeholder: 'KEY',
    description: "A tenant's API key, tk_… (default: TIMER_API_KEY, else local mode's development key)",
  },
} as const satisfies OptionSpecs;

const DEFAULT_DATA_DIR = '.timer-data';
/** Where `npm start` listens unless TIMER_PORT says otherwise. */
export const DEFAULT_LOCAL_PORT = 3000;

export function dataDirOf(options: { readonly 'data-dir'?: string }, io: CliIo): string {
  return resolve(io.cwd, options['data-dir'] ?? io.env.TIMER_DATA_DIR ?? DEFAULT_DATA_DIR);
}

/** The running local mode's API on this data folder, or where `npm start` listens by default. */
export async function localApiUrl(dataDir: string, io: CliIo): Promise<string> {
  const running = await runningLocalEndpoints(dataDir);
  return running?.apiUrl ?? `http://127.0.0.1:${io.env.TIMER_PORT ?? DEFAULT_LOCAL_PORT}`;
}

export interface ApiConnection {
  readonly client: TimerClient;
  readonly baseUrl: string;
  /** The tenant the key belongs to, as its text says. */
  readonly tenantId: string;
}

/** A client for the API the options name; local mode's API and development key when they name none. */
export async function connectToApi(
  options: { readonly 'api-url'?: string; readonly 'api-key'?: string; readonly 'data-dir'?: string },
  io: CliIo,
): Promise<ApiConnection> {
  const dataDir = dataDirOf(options, io);
  const givenUrl = options['api-url'] ?? io.env.TIMER_URL;
  const baseUrl = givenUrl ?? (await localApiUrl(dataDir, io));
  // The development key only makes sense for local mode, so it is not sent to a URL given explicitly.
  const apiKey =
    options['api-key'] ??
    io.env.TIMER_API_KEY ??
    (givenUrl ? undefined : await readKeyFile(join(dataDir, DEV_API_KEY_FILE)));
  if (!apiKey) {
    const devKeyHint = givenUrl
      ? ''
      : `; local mode keeps its development key in ${join(dataDir, DEV_API_KEY_FILE)} once started`;
    throw new UsageError(
      `no API key: pass --api-key tk_… or set TIMER_API_KEY (\`timer tenants create\` makes a tenant and its key${devKeyHint})`,
    );
  }
  const parsed = parseApiKey(apiKey);
  if (!parsed) {
    throw new UsageError(
      'the API key is malformed: it looks like tk_<tenant>_<key id>_<secret>_<tag>, as `timer tenants create` prints it',
    );
  }
  return { client: new TimerClient({ baseUrl, apiKey }), baseUrl, tenantId: parsed.tenantId };
}

export interface OpenedTenantStore {
  readonly store: TenantStore;
  /** Where the tenants live, to tell the operator. */
  readonly location: string;
  close(): Promise<void>;
}

/**
 * The tenant store of the table the options name, or local mode's. A running local mode
 * holds its data folder's lock, so its own dynalite is used; otherwise the folder is
 * opened here for the length of the command.
 */
export async function openTenantStore(
  options: { readonly table?: string; readonly region?: string; readonly 'data-dir'?: string },
  io: CliIo,
): Promise<OpenedTenantStore> {
  const tableName = options.table ?? io.env.TIMER_TABLE_NAME;
  if (tableName) {
    const region = options.region ?? io.env.AWS_REGION;
    const raw = new DynamoDBClient(region ? { region } : {});
    return {
      store: new DynamoTenantStore({
        client: DynamoDBDocumentClient.from(raw, { marshallOptions: { removeUndefinedValues: true } }),
        tableName,
      }),
      location: `table ${tableName}${region ? ` (${region})` : ''}`,
      close: async () => raw.destroy(),
    };
  }
  const dataDir = dataDirOf(options, io);
  const running = await runningLocalEndpoints(dataDir);
  if (running) {
    const { raw, dynamo } = localDynamoClients(running.dynamodbEndpoint);
    return {
      store: new DynamoTenantStore({ client: dynamo, tableName: running.tableName }),
      location: `local mode (pid ${running.pid}, ${dataDir})`,
      close: async () => raw.destroy(),
    };
  }
  const localDynamo = await startLocalDynamo(dataDir);
  const { raw, dynamo } = localDynamoClients(localDynamo.endpoint);
  await ensureLocalTaskTable(raw);
  return {
    store: new DynamoTenantStore({ client: dynamo, tableName: LOCAL_TABLE_NAME }),
    location: `local data folder ${dataDir}`,
    close: async () => {
      raw.destroy();
      await localDynamo.close();
    },
  };
}
